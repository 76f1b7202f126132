package run

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/browsertest"
	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/run/spec"
)

// liveState is what the live page's script recorded (window.mqblast.live).
type liveState struct {
	Events    int  `json:"events"`
	Seq       int  `json:"seq"`
	Intervals int  `json:"intervals"`
	Done      bool `json:"done"`
}

// livePoints is what the page drew: its live state and the throughput chart's points.
type livePoints struct {
	Live   liveState `json:"live"`
	Points int       `json:"points"`
	Title  string    `json:"title"`
}

const livePointsJS = `({live: window.mqblast.live, points: (window.mqblast.charts.throughput || {points: 0}).points, title: document.title})`

// TestLivePage: a run against Mosquitto with --live serves its report page while it runs;
// in Chromium the page's charts gain points interval by interval (read twice, seconds
// apart: more intervals, more points, two per interval in the throughput chart), a second
// tab opened later has the whole history at once, the page requests nothing but its own
// origin and logs no error, and at the end it shows the final report (its verdicts).
func TestLivePage(t *testing.T) {
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	b := browsertest.Start(t)
	addr := fmt.Sprintf("127.0.0.1:%d", testbroker.FreePort(t, "127.0.0.1"))
	out := filepath.Join(t.TempDir(), "r.json")
	sp := quick("quick-p2p-100", m.Addr)
	sp.Duration, sp.NoCheck, sp.Procs = spec.Duration(9*time.Second), true, 1
	sp.Outputs = spec.Outputs{Out: out, Live: addr}
	g := goSpec(context.Background(), t, sp)
	testbroker.WaitListening(t, addr, 30*time.Second)
	u := "http://" + addr + "/"
	pg := b.OpenURL(t, u, "window.mqblast && window.mqblast.ready && window.mqblast.live && window.mqblast.live.intervals >= 2")
	first := browsertest.Eval[livePoints](pg, livePointsJS)
	time.Sleep(3 * time.Second)
	second := browsertest.Eval[livePoints](pg, livePointsJS)
	t.Logf("first read %+v, 3 s later %+v", first, second)
	if first.Live.Done || second.Live.Done {
		t.Fatalf("the run ended before the second read: make it longer")
	}
	if second.Live.Intervals <= first.Live.Intervals || second.Live.Events <= first.Live.Events {
		t.Errorf("the page took no interval in 3 s: %+v then %+v", first.Live, second.Live)
	}
	if second.Points <= first.Points || first.Points != 2*first.Live.Intervals || second.Points != 2*second.Live.Intervals {
		t.Errorf("the throughput chart drew %d then %d points over %d then %d intervals, want 2 per interval",
			first.Points, second.Points, first.Live.Intervals, second.Live.Intervals)
	}
	if !strings.HasPrefix(second.Title, "mqblast live: ") {
		t.Errorf("title %q during the run", second.Title)
	}
	// A page opened later (as one that reconnects) has every interval at once.
	late := b.OpenURL(t, u, "window.mqblast && window.mqblast.live && window.mqblast.live.events >= 1")
	lp, now := browsertest.Eval[livePoints](late, livePointsJS), browsertest.Eval[livePoints](pg, livePointsJS)
	if lp.Live.Intervals < second.Live.Intervals || lp.Points != 2*lp.Live.Intervals {
		t.Errorf("a page opened later has %d intervals (%d points), the first one %d: want the whole history", lp.Live.Intervals, lp.Points, now.Live.Intervals)
	}

	r := g.wait()
	if r.err != nil {
		t.Fatalf("%v\n%s", r.err, r.stderr)
	}
	res, err := result.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []*browsertest.Page{pg, late} {
		if _, err := waitEval(p, "window.mqblast.live.done"); err != nil {
			t.Fatalf("the page did not get the run's end: %v", err)
		}
		end := browsertest.Eval[livePoints](p, livePointsJS)
		if !strings.HasPrefix(end.Title, "mqblast report: ") || end.Points != 2*len(res.Intervals) {
			t.Errorf("at the end the page shows %q with %d points, want the report with 2 x %d intervals", end.Title, end.Points, len(res.Intervals))
		}
		if badge := browsertest.Eval[string](p, `document.querySelector("#summary .badge").textContent`); badge != "complete" {
			t.Errorf("the final report's first verdict is %q, want complete", badge)
		}
		if errs := p.Errors(); len(errs) > 0 {
			t.Errorf("console errors: %q", errs)
		}
		if reqs := p.Requests(); len(reqs) > 0 {
			t.Errorf("the page requested other origins: %q", reqs)
		}
	}
	t.Log("screenshot:", pg.Screenshot("live.png"))
	if !strings.Contains(r.stderr, "live page at http://"+addr+"/") {
		t.Errorf("the run did not say where its live page is:\n%s", r.stderr)
	}
	// The server is closed once the run is over (no --live-hold).
	if resp, err := http.Get(u); err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		t.Errorf("the live page is still served after the run")
	}
	_ = os.Remove(out)
}

// waitEval waits up to 30 s until the expression is true on p.
func waitEval(p *browsertest.Page, expr string) (bool, error) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if browsertest.Eval[bool](p, "!!("+expr+")") {
			return true, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false, fmt.Errorf("%s not true in 30 s", expr)
}
