package bench

import (
	"bytes"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mqblast/mqblast/reactor"
	"github.com/mqblast/mqblast/result"
)

// TestRecorderTake: a loop's counts move into the snapshot and reset; a refusal's example
// names the first client refused for that reason.
func TestRecorderTake(t *testing.T) {
	t.Parallel()
	rec := NewRecorder(2)
	rec.Describe = func(i int) (string, string) { return "dev-" + strconv.Itoa(i), "" }
	rec.Connected(1, 7, 1500*time.Microsecond)
	rec.Refused(1, 8, 0, 5, 0x87)
	rec.Refused(0, 9, 0, 4, 5)
	rec.Failed(0, 10, 0, reactor.CauseTimeout, "no CONNACK")
	rec.Dropped(1, 11, reactor.CauseKeepalive, "no PINGRESP")
	rec.Ping(0, 7, 300*time.Microsecond)
	s := result.NewSnapshot()
	rec.Take(0, s)
	rec.Take(1, s)
	if s.Connected != 1 || s.Refused["not_authorized"] != 2 || s.Failed["timeout"] != 1 ||
		s.Dropped["keepalive_timeout"] != 1 || s.Pings != 1 || s.ConnectLatency.Count() != 1 {
		t.Fatalf("snapshot %+v", s)
	}
	if ex := s.Examples["refused:not_authorized"]; ex != "client dev-9: CONNACK reason code 0x05 (not_authorized)" {
		t.Errorf("examples %v", s.Examples)
	}
	again := result.NewSnapshot()
	rec.Take(1, again)
	if again.Connected != 0 || again.ConnectLatency.Count() != 0 {
		t.Errorf("Take did not reset: %+v", again)
	}
}

// TestGather merges two workers' streams interval by interval and their final results.
func TestGather(t *testing.T) {
	t.Parallel()
	worker := func(connected []int64) io.Reader {
		var buf bytes.Buffer
		ww := NewWorkerWriter(&buf)
		total := result.NewSnapshot()
		var open int64
		for i, c := range connected {
			s := result.NewSnapshot()
			s.Connected = c
			s.CPUNS, s.RSSBytes = 250_000_000, 1<<20 // a quarter of a core, 1 MiB
			for j := int64(0); j < c; j++ {
				s.ConnectLatency.Record(1000 + j)
			}
			open += c
			total.Add(s)
			if err := ww.Interval(result.NewInterval(float64(i+1), open, s, time.Second), s); err != nil {
				t.Fatal(err)
			}
		}
		res := &result.Result{Schema: result.Schema, Connections: result.Connections{Target: 10}, Host: result.HostInfo{Procs: 1}}
		res.SetTotal(total)
		if err := ww.Final(res, nil, 0); err != nil {
			t.Fatal(err)
		}
		return &buf
	}
	var progress bytes.Buffer
	res, err := Gather(GatherOptions{Streams: []io.Reader{worker([]int64{6, 4}), worker([]int64{10, 0, 0})}, Target: 20,
		Interval: time.Second, Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Intervals) != 3 {
		t.Fatalf("intervals %+v", res.Intervals)
	}
	if iv := res.Intervals[0]; iv.Connected != 16 || iv.Established != 16 || iv.ConnectLatencyUS.Count != 16 {
		t.Errorf("first interval %+v", iv)
	}
	if iv := res.Intervals[1]; iv.Connected != 4 || iv.Established != 20 {
		t.Errorf("second interval %+v", iv)
	}
	// Both workers had intervals 1 and 2, only the second had 3: their CPU and RSS add.
	for i, want := range []struct {
		cpu float64
		rss int64
	}{{50, 2 << 20}, {50, 2 << 20}, {25, 1 << 20}} {
		if iv := res.Intervals[i]; iv.ClientCPUPercent != want.cpu || iv.ClientRSSBytes != want.rss {
			t.Errorf("interval %d: client cpu %v%% rss %d, want %v%% %d", i, iv.ClientCPUPercent, iv.ClientRSSBytes, want.cpu, want.rss)
		}
	}
	if h := res.Intervals[0].Histograms; h == nil || h.ConnectLatency.Count() != 16 {
		t.Errorf("first interval's connect histogram: %+v", h)
	}
	if res.Connections.Established != 20 || res.Connections.Target != 20 || res.Histograms.ConnectLatency.Count() != 20 {
		t.Errorf("merged %+v", res.Connections)
	}
	if got := strings.Count(progress.String(), "\n"); got != 3 {
		t.Errorf("progress lines %d:\n%s", got, progress.String())
	}
}

// TestGatherWorkerError: a worker that reports an error passes it, with its exit code, up.
func TestGatherWorkerError(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	_ = NewWorkerWriter(&buf).Final(nil, io.ErrUnexpectedEOF, 3)
	_, err := Gather(GatherOptions{Streams: []io.Reader{&buf}, Target: 1, Interval: time.Second})
	var we *WorkerError
	if err == nil || !strings.Contains(err.Error(), "unexpected EOF") {
		t.Fatalf("err %v", err)
	}
	_ = we
}
