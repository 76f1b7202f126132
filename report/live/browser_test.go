package live

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/browsertest"
	"github.com/mqblast/mqblast/result"
)

// pageState is what the live page's script recorded, and what its throughput chart drew.
type pageState struct {
	Events    int  `json:"events"`
	Intervals int  `json:"intervals"`
	Done      bool `json:"done"`
	Opened    int  `json:"opened"`
	Errors    int  `json:"errors"`
	Points    int  `json:"points"`
}

const pageStateJS = `Object.assign({}, window.mqblast.live, {points: (window.mqblast.charts.throughput || {points: 0}).points})`

// waitPage waits up to 30 s until cond holds of the page's state, and returns it.
func waitPage(t *testing.T, pg *browsertest.Page, what string, cond func(pageState) bool) pageState {
	t.Helper()
	var st pageState
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if st = browsertest.Eval[pageState](pg, pageStateJS); cond(st) {
			return st
		}
	}
	t.Fatalf("%s: not in 30 s (%+v)", what, st)
	return st
}

// TestBrowserReconnect: in Chromium, a live page whose connection is lost (the server drops
// the stream while the network is off) misses the intervals that close meanwhile; once the
// network is back the browser reconnects by itself and the page has every interval at
// once, then the next ones, then the final report at the end.
func TestBrowserReconnect(t *testing.T) {
	b := browsertest.Start(t)
	l := New(&result.Result{Broker: []string{"127.0.0.1:1883"}, StartedAt: time.Now()})
	srv := httptest.NewServer(l.Handler())
	defer srv.Close()
	defer l.Close()
	l.Interval(interval(1))
	l.Interval(interval(2))
	pg := b.OpenURL(t, srv.URL+"/", "window.mqblast && window.mqblast.live && window.mqblast.live.intervals >= 2")
	st := waitPage(t, pg, "the first event", func(s pageState) bool { return s.Opened >= 1 && s.Intervals == 2 })
	if st.Points != 4 {
		t.Errorf("2 intervals drew %d points, want 4", st.Points)
	}
	if err := pg.SetOffline(true); err != nil {
		t.Fatal(err)
	}
	l.dropStreams()
	waitPage(t, pg, "the stream's error", func(s pageState) bool { return s.Errors >= 1 })
	l.Interval(interval(3))
	l.Interval(interval(4))
	time.Sleep(500 * time.Millisecond)
	if st := browsertest.Eval[pageState](pg, pageStateJS); st.Intervals != 2 {
		t.Errorf("offline, the page took intervals: %+v", st)
	}
	if err := pg.SetOffline(false); err != nil {
		t.Fatal(err)
	}
	st = waitPage(t, pg, "the page resumed", func(s pageState) bool { return s.Intervals == 4 })
	t.Logf("after reconnecting: %+v", st)
	if st.Opened < 2 || st.Points != 8 {
		t.Errorf("after reconnecting: opened %d times, %d points, want 2 and 8", st.Opened, st.Points)
	}
	l.Interval(interval(5))
	waitPage(t, pg, "the next interval", func(s pageState) bool { return s.Intervals == 5 && s.Points == 10 })
	l.Finish(&result.Result{Broker: []string{"127.0.0.1:1883"}, Intervals: []result.Interval{interval(1), interval(2), interval(3), interval(4), interval(5), interval(6)},
		Messages: result.Messages{Scheduled: 600, Published: 600, Expected: 600, Received: 600}})
	st = waitPage(t, pg, "the final report", func(s pageState) bool { return s.Done })
	if st.Intervals != 6 || st.Points != 12 {
		t.Errorf("the final report: %+v, want 6 intervals, 12 points", st)
	}
	if errs := pg.Errors(); len(errs) > 0 {
		t.Logf("console (the offline stream's errors are expected): %q", errs)
	}
	if reqs := pg.Requests(); len(reqs) > 0 {
		t.Errorf("the page requested other origins: %q", reqs)
	}
}
