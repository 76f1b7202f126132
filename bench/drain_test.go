package bench

import (
	"bytes"
	"context"
	"errors"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/internal/tier"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/scenario"
)

// overloadFanOut is a QoS 0 fan-out of 1 publisher at 8,000 msg/s to 50 subscribers:
// 400,000 copies a second, several times what Mosquitto delivers on a 2-core host (about
// 120,000), so that its backlog is still arriving when publishing stops.
const overloadFanOut = `{"name": "drain-fanout", "type": "Fan-Out",
	"publishers": {"id_prefix": "dp-", "protocol_version": 4, "client_count": 1, "qos": 0, "topics": "drain/fanout"},
	"subscribers": {"id_prefix": "ds-", "protocol_version": 4, "client_count": 50, "qos": 0, "topics": "drain/fanout"},
	"parameters": {"connection_rate": 1000, "duration_sec": "1500ms", "warmup_sec": "500ms", "payload_size": 16,
		"publish_rate": 8000, "drain_sec": "500ms", "keep_alive_sec": 60}}`

// runDrain runs overloadFanOut against broker with the drain bounded at maxDrain past its
// drain_sec (0: MaxDrain), while during runs beside it; during is given a channel closed
// once an interval line shows messages sent.
func runDrain(t *testing.T, broker string, maxDrain time.Duration, during func(sending <-chan struct{})) *result.Result {
	t.Helper()
	s, err := scenario.Parse("drain.json", []byte(overloadFanOut))
	if err != nil {
		t.Fatal(err)
	}
	r := testRunner(t, broker, s)
	r.maxDrain = maxDrain
	w := &sendingWriter{sending: make(chan struct{})}
	r.Progress = w
	var beside func()
	if during != nil {
		beside = func() { during(w.sending) }
	}
	res := runRunner(t, r, beside)
	var doc bytes.Buffer
	if err := res.WriteJSON(&doc); err != nil {
		t.Fatal(err)
	}
	if err := result.CheckDocument(doc.Bytes()); err != nil {
		t.Errorf("the document does not add up: %v", err)
	}
	m := res.Messages
	t.Logf("expected %d received %d lost %d owed %d at %d/s; drain %.2fs", m.Expected, m.Received, m.Lost, m.OwedAtEnd, m.OwedArrivalPerS, m.DrainS)
	return res
}

// TestDrainOwedWhileArriving: Mosquitto is behind a QoS 0 fan-out it cannot keep up with,
// and its backlog is still arriving when the drain reaches its bound (500 ms, then 1 s
// more as copies kept arriving): the copies still missing are owed at the end, with the
// rate they were arriving at, and none is called lost.
func TestDrainOwedWhileArriving(t *testing.T) {
	tm := tier.Timing(t)
	// Capped at 30 % of a core, Mosquitto is behind the fan-out on any host (uncapped, a
	// quiet one delivered every copy within the bound).
	m := testbroker.StartMosquitto(t, testbroker.Options{CPUQuota: 0.3})
	res := runDrain(t, m.Addr, time.Second, nil)
	msg := res.Messages
	if msg.Expected != msg.Received+msg.Lost+msg.OwedAtEnd {
		t.Errorf("expected %d != received %d + lost %d + owed %d", msg.Expected, msg.Received, msg.Lost, msg.OwedAtEnd)
	}
	if msg.Received == msg.Expected {
		tm.Errorf("Mosquitto delivered all %d copies before the drain's bound: it kept up, the test saw nothing owed", msg.Expected)
		return
	}
	if msg.Lost != 0 || msg.OwedAtEnd == 0 || msg.OwedArrivalPerS <= 0 {
		t.Errorf("lost %d, owed %d at %d/s: copies still arriving when the drain ended are owed, not lost",
			msg.Lost, msg.OwedAtEnd, msg.OwedArrivalPerS)
	}
	if msg.DrainS < 1.4 || msg.DrainS > 5 { // drain_sec 500 ms, then 1 s more while copies arrive
		tm.Errorf("drain lasted %.2fs: want 500 ms and the 1 s bound past it", msg.DrainS)
	}
}

// TestDrainGoesOnWhileArriving: the same overloaded fan-out with the drain's own bound: the
// drain goes on past its 500 ms while copies keep arriving, until every copy is in.
func TestDrainGoesOnWhileArriving(t *testing.T) {
	tm := tier.Timing(t)
	m := testbroker.StartMosquitto(t, testbroker.Options{CPUQuota: 0.3}) // behind, as above
	res := runDrain(t, m.Addr, 0, nil)
	msg := res.Messages
	if msg.Lost != 0 {
		t.Errorf("lost %d: the broker's backlog was still arriving", msg.Lost)
	}
	if msg.Received != msg.Expected || msg.OwedAtEnd != 0 {
		tm.Errorf("received %d of %d, owed %d: the drain should have waited for every copy (its bound is %v)",
			msg.Received, msg.Expected, msg.OwedAtEnd, MaxDrain)
	}
	if msg.DrainS < 0.6 {
		tm.Errorf("drain lasted %.2fs: Mosquitto kept up, the drain had nothing to wait for", msg.DrainS)
	}
}

// TestDrainLostWhenArrivalsStop: the same fan-out, Mosquitto stopped (SIGSTOP) once
// publishing is under way: arrivals stop, the drain sees an interval pass with none and ends, and
// the copies still missing are lost, none owed.
func TestDrainLostWhenArrivalsStop(t *testing.T) {
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	t.Cleanup(func() { _ = m.Cmd.Process.Signal(syscall.SIGCONT) })
	res := runDrain(t, m.Addr, 0, func(sending <-chan struct{}) {
		select {
		case <-sending:
			time.Sleep(300 * time.Millisecond)
		case <-time.After(30 * time.Second):
		}
		_ = m.Cmd.Process.Signal(syscall.SIGSTOP)
	})
	_ = m.Cmd.Process.Signal(syscall.SIGCONT)
	msg := res.Messages
	if msg.Lost == 0 || msg.OwedAtEnd != 0 || msg.OwedArrivalPerS != 0 {
		t.Errorf("lost %d, owed %d at %d/s: copies missing once arrivals stopped are lost", msg.Lost, msg.OwedAtEnd, msg.OwedArrivalPerS)
	}
	if msg.Expected != msg.Received+msg.Lost {
		t.Errorf("expected %d != received %d + lost %d", msg.Expected, msg.Received, msg.Lost)
	}
	if bound := (500*time.Millisecond + MaxDrain).Seconds(); msg.DrainS >= bound {
		t.Errorf("drain lasted %.2fs: it should end once arrivals stopped, not at its bound (%.0fs)", msg.DrainS, bound)
	}
}

// TestDrainOwedWhenInterrupted: the same fan-out interrupted (its context cancelled) a
// second into publishing, Mosquitto's backlog arriving: the run ends without a drain, and
// the copies still missing are owed at the end, at the rate of its last interval, not lost.
func TestDrainOwedWhenInterrupted(t *testing.T) {
	tm := tier.Timing(t)
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	s, err := scenario.Parse("drain.json", []byte(overloadFanOut))
	if err != nil {
		t.Fatal(err)
	}
	r := testRunner(t, m.Addr, s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(1500*time.Millisecond, cancel) // the connect phase, then about a second of publishing
	res, err := r.Run(ctx)
	if !errors.Is(err, ErrInterrupted) || res == nil || !res.Interrupted {
		t.Fatalf("run: %v; want it interrupted", err)
	}
	msg := res.Messages
	t.Logf("expected %d received %d lost %d owed %d at %d/s; drain %.2fs", msg.Expected, msg.Received, msg.Lost, msg.OwedAtEnd, msg.OwedArrivalPerS, msg.DrainS)
	if msg.Expected != msg.Received+msg.Lost+msg.OwedAtEnd {
		t.Errorf("expected %d != received %d + lost %d + owed %d", msg.Expected, msg.Received, msg.Lost, msg.OwedAtEnd)
	}
	if msg.Received == msg.Expected {
		tm.Errorf("Mosquitto delivered all %d copies before the interrupt: it kept up, the test saw nothing owed", msg.Expected)
		return
	}
	if msg.Lost != 0 || msg.OwedAtEnd == 0 || msg.OwedArrivalPerS <= 0 || msg.DrainS != 0 {
		t.Errorf("lost %d, owed %d at %d/s, drain %.2fs: copies arriving when the run was interrupted are owed, not lost",
			msg.Lost, msg.OwedAtEnd, msg.OwedArrivalPerS, msg.DrainS)
	}
}

// sendingWriter takes a run's progress lines and closes sending at the first interval line
// that shows messages sent.
type sendingWriter struct {
	mu      sync.Mutex
	sending chan struct{}
	closed  bool
}

func (w *sendingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed && sendingRE.Match(p) {
		w.closed = true
		close(w.sending)
	}
	return len(p), nil
}

// sendingRE matches an interval line of a run whose publishers are sending.
var sendingRE = regexp.MustCompile(`sent [1-9][0-9]*/s`)
