package bench

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/scenario"
)

// TestWorkersHoldTogether: two runs started 350 ms apart, as two worker processes of one run
// may be, hold from the same instant (their hold gate's, 2.5 s after the second started:
// mid-interval for both): from it their intervals end together, at whole intervals from it,
// and carry the same numbers (Slot), so that the parent merges intervals of one instant and
// its readers wake once for both lines. The second is starved as the hold begins (the
// callback of the interval its hold ends sleeps until 150 ms after its next tick is due, as
// a process short of CPU would be): that tick is taken late, and the intervals after it
// still end on the grid.
func TestWorkersHoldTogether(t *testing.T) {
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	const lag, starve = 350 * time.Millisecond, 150 * time.Millisecond
	var starved atomic.Bool
	var at time.Time // set by the second as it starts; the gates wait for it
	atSet := make(chan struct{})
	type end struct {
		at   time.Time
		slot int
	}
	ends := make([][]end, 2)
	var wg sync.WaitGroup
	for w := range 2 {
		s := builtin(t, "quick-conn-100", map[string]string{"publishers.client_count": "20",
			"publishers.id_prefix": [2]string{"hold-a-", "hold-b-"}[w], "parameters.duration_sec": "3s"})
		r := testRunner(t, m.Addr, s)
		r.HoldGate = func() (time.Time, error) { <-atSet; return at, nil }
		var mu sync.Mutex
		r.OnInterval = func(iv result.Interval, _ *result.Snapshot) {
			if w == 1 && iv.Slot == 0 && !time.Now().Before(at) {
				time.Sleep(time.Until(at.Add(time.Second + starve)))
				starved.Store(true)
			}
			mu.Lock()
			ends[w] = append(ends[w], end{time.Now(), iv.Slot})
			mu.Unlock()
		}
		wg.Go(func() {
			time.Sleep(time.Duration(w) * lag)
			if w == 1 {
				at = time.Now().Add(2500 * time.Millisecond)
				close(atSet)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := r.Run(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			audited(t, res)
			if res.Connections.Established != 20 {
				t.Errorf("worker %d: %d of 20 established", w, res.Connections.Established)
			}
		})
	}
	wg.Wait()
	bySlot := make([]map[int]time.Time, 2)
	for w, list := range ends {
		bySlot[w] = map[int]time.Time{}
		for _, e := range list {
			if e.slot > 0 {
				bySlot[w][e.slot] = e.at
			}
		}
		t.Logf("worker %d: %d intervals, %d after the hold's start", w, len(list), len(bySlot[w]))
	}
	if !starved.Load() {
		t.Fatal("worker 1 was not starved after the hold began")
	}
	for slot := 1; slot <= 2; slot++ {
		want := at.Add(time.Duration(slot) * time.Second)
		for w := range 2 {
			if w == 1 && slot == 1 {
				continue // starved through it
			}
			got, ok := bySlot[w][slot]
			if !ok {
				t.Errorf("worker %d: no interval %d after the hold's start", w, slot)
				continue
			}
			if d := got.Sub(want); d < 0 || d > 100*time.Millisecond {
				t.Errorf("worker %d: interval %d ended %v after the whole interval %v, want within 100 ms",
					w, slot, d, want.Format("15:04:05.000"))
			}
		}
	}
}

// TestHoldOneProcPerLoop: a Connections run holds its clients with one P per event loop (no
// P to spare, so that the runtime's sysmon takes back a sleeping loop's P at once and
// sleeps, rather than polling for 10 ms after every wake), and gives the process its
// GOMAXPROCS back when the hold ends.
func TestHoldOneProcPerLoop(t *testing.T) {
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	before := runtime.GOMAXPROCS(0)
	s := builtin(t, "quick-conn-100", map[string]string{"publishers.client_count": "20",
		"publishers.id_prefix": "procs-", "parameters.duration_sec": "2s"})
	r := testRunner(t, m.Addr, s)
	r.Engine.Loops = 2
	var mu sync.Mutex
	held := map[int]int{} // GOMAXPROCS at the intervals with every client held
	r.OnInterval = func(iv result.Interval, _ *result.Snapshot) {
		if iv.Established == 20 {
			mu.Lock()
			held[runtime.GOMAXPROCS(0)]++
			mu.Unlock()
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := r.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	audited(t, res)
	after := runtime.GOMAXPROCS(0)
	t.Logf("GOMAXPROCS %d before, %v at the held intervals, %d after; %d established", before, held, after, res.Connections.Established)
	if res.Connections.Established != 20 {
		t.Fatalf("%d of 20 established", res.Connections.Established)
	}
	if len(held) != 1 || held[2] < 1 {
		t.Errorf("GOMAXPROCS at the held intervals: %v, want 2 (the loops) at every one", held)
	}
	if after != max(before, 3) {
		t.Errorf("GOMAXPROCS %d after the run, want %d: the engine's (loops+1), or the process's when higher", after, max(before, 3))
	}
}

// TestStreamOnlyKeepsNoIntervals: a run that streams its intervals (a worker process's)
// hands every one to OnInterval, the groups' records with them, and keeps none in its
// result; the same run without StreamOnly keeps them all. The snapshots a streaming run
// reuses hold each interval's figures alone.
func TestStreamOnlyKeepsNoIntervals(t *testing.T) {
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	for _, streamOnly := range []bool{true, false} {
		s, err := scenario.Parse("test.json", []byte(mixedJSON))
		if err != nil {
			t.Fatal(err)
		}
		r := testRunner(t, m.Addr, s)
		r.StreamOnly = streamOnly
		var got []result.Interval
		var snapConnected, snapLatencies int64 // from the snapshots, as OnInterval gets them
		r.OnInterval = func(iv result.Interval, sn *result.Snapshot) {
			got = append(got, iv)
			snapConnected += sn.Connected
			for _, g := range sn.Groups {
				snapLatencies += g.ConnectLatency.Count()
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		res, err := r.Run(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		audited(t, res)
		var connected int64
		for _, iv := range got {
			for _, g := range iv.Groups {
				connected += g.Connected
			}
		}
		if len(got) < 3 || connected != res.Connections.Established || connected != 310 {
			t.Errorf("StreamOnly %v: %d intervals streamed, their groups connected %d, the run %d (want 310)",
				streamOnly, len(got), connected, res.Connections.Established)
		}
		if snapConnected != 310 || snapLatencies != 310 {
			t.Errorf("StreamOnly %v: the snapshots handed over connected %d, their groups' connect latencies %d (want 310)",
				streamOnly, snapConnected, snapLatencies)
		}
		if want := map[bool]int{true: 0, false: len(got)}[streamOnly]; len(res.Intervals) != want {
			t.Errorf("StreamOnly %v: the result keeps %d intervals, want %d", streamOnly, len(res.Intervals), want)
		}
	}
}

// TestSettledAfterConnect: when the resident set after the connect phase is read, no
// histogram holds counts: the loop's snapshot and the collection's buffer, busy with 310
// connect latencies in one interval, gave theirs back, and the interval's carry and the
// run's total are packed; the figures lose nothing by it (the result counts every connect
// latency).
func TestSettledAfterConnect(t *testing.T) {
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	s, err := scenario.Parse("test.json", []byte(mixedJSON))
	if err != nil {
		t.Fatal(err)
	}
	r := testRunner(t, m.Addr, s)
	r.Engine.Loops = 1 // every connect latency in one loop's snapshot, past the few kept as they are
	checked := false
	r.onHeld = func(x *run) {
		checked = true
		if n := x.rec.loops[0].snap.HeldCounts(); n != 0 {
			t.Errorf("the loop's snapshot holds %d counts arrays", n)
		}
		if n := x.src.snaps[0].HeldCounts(); n != 0 {
			t.Errorf("the collection's buffer holds %d counts arrays", n)
		}
		if n := x.src.carry.HeldCounts(); n != 0 {
			t.Errorf("the interval's carry holds %d counts arrays", n)
		}
		if n, c := x.src.total.HeldCounts(), x.src.total.ConnectLatency.Count(); n != 0 || c != 310 {
			t.Errorf("the total holds %d counts arrays, %d connect latencies (want 0, 310)", n, c)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := r.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	audited(t, res)
	if !checked {
		t.Fatal("the run never read its resident set after the connect phase")
	}
	var inIntervals int64
	for _, iv := range res.Intervals {
		inIntervals += iv.Histograms.ConnectLatency.Count()
	}
	if res.Connections.ConnectLatencyUS.Count != 310 || inIntervals != 310 {
		t.Errorf("connect latencies: %d in the result, %d in its intervals (want 310)", res.Connections.ConnectLatencyUS.Count, inIntervals)
	}
}
