package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/browsertest"
	"github.com/mqblast/mqblast/internal/fail"
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

// api makes a request of the live API with token ("": none) and returns its status and body.
func api(t *testing.T, method, u, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close() //nolint:errcheck
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitIntervals waits until the live API's status says n intervals closed, and returns it.
func waitIntervals(t *testing.T, base, token string, n int) liveStatus {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		code, body := api(t, "GET", base+"/api/status", token, "")
		var st liveStatus
		if code == http.StatusOK {
			if err := json.Unmarshal([]byte(body), &st); err != nil {
				t.Fatalf("status %s: %v", body, err)
			}
			if st.Intervals >= n {
				return st
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %d intervals in 60 s: %d %s", n, code, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// liveStatus is GET /api/status's answer.
type liveStatus struct {
	State     string           `json:"state"`
	Intervals int              `json:"intervals"`
	Interval  *result.Interval `json:"interval"`
	Changes   []struct {
		What   string `json:"what"`
		Source string `json:"source"`
	} `json:"changes"`
}

// TestLiveStatusStop: the live API of a run against Mosquitto, its token from
// $MQBLAST_LIVE_TOKEN: a wrong or missing token is refused (401) and appears nowhere; status
// gives the last interval's figures; stop ends the run as an interrupt does, with a whole
// result (audited) in which the token is nowhere; in one process and with two workers.
func TestLiveStatusStop(t *testing.T) {
	t.Parallel()
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	for _, procs := range []int{1, 2} {
		t.Run(fmt.Sprintf("procs=%d", procs), func(t *testing.T) { liveStatusStop(t, m.Addr, procs) })
	}
}

func liveStatusStop(t *testing.T, broker string, procs int) {
	addr := fmt.Sprintf("127.0.0.1:%d", testbroker.FreePort(t, "127.0.0.1"))
	out := filepath.Join(t.TempDir(), "r.json")
	const token, wrong = "tok-9f2c1e7a55", "wrong-4b8d0c3e11"
	sp := quick("quick-p2p-100", broker)
	sp.Duration, sp.NoCheck, sp.Procs = spec.Duration(60*time.Second), true, spec.Procs(procs)
	sp.Outputs = spec.Outputs{Out: out, Live: addr}
	start := time.Now()
	g := goSpec(context.Background(), t, sp, LiveTokenEnv+"="+token)
	testbroker.WaitListening(t, addr, 30*time.Second)
	base := "http://" + addr
	for _, tok := range []string{wrong, ""} {
		code, body := api(t, "GET", base+"/api/status", tok, "")
		if code != http.StatusUnauthorized || strings.Contains(body, wrong) {
			t.Errorf("token %q: %d %s, want 401 without the token in it", tok, code, body)
		}
		if code, _ := api(t, "POST", base+"/api/stop", tok, ""); code != http.StatusUnauthorized {
			t.Errorf("stop with token %q: %d, want 401", tok, code)
		}
	}
	st := waitIntervals(t, base, token, 3)
	if st.State != "running" || st.Interval == nil || st.Interval.Published == 0 || st.Interval.Established != 200 {
		t.Fatalf("status during the run: %+v %+v", st, st.Interval)
	}
	code, body := api(t, "POST", base+"/api/stop", token, "")
	if code != http.StatusOK || !strings.Contains(body, `"state":"stopping"`) {
		t.Fatalf("stop: %d %s", code, body)
	}
	if code, body := api(t, "POST", base+"/api/stop", token, ""); code != http.StatusConflict {
		t.Errorf("a second stop: %d %s, want 409", code, body)
	}
	r := g.wait()
	t.Logf("stopped after %v: %v", r.took.Round(time.Millisecond), r.err)
	if !errors.Is(r.err, fail.ErrInterrupted) {
		t.Fatalf("the run ended with %v, want interrupted\n%s", r.err, r.stderr)
	}
	if r.took > 40*time.Second || time.Since(start) > 45*time.Second {
		t.Errorf("the stopped run took %v of its 60 s", r.took)
	}
	res, err := result.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Interrupted || res.Messages.Published == 0 || res.Messages.Lost != 0 || len(res.Intervals) < 3 {
		t.Errorf("the result: interrupted %v, published %d, lost %d, %d intervals", res.Interrupted, res.Messages.Published, res.Messages.Lost, len(res.Intervals))
	}
	doc, _ := os.ReadFile(out)
	for _, s := range []string{string(doc), r.stderr, r.stdout} {
		if strings.Contains(s, token) || strings.Contains(s, wrong) {
			t.Errorf("a token is written: %q", s[:min(len(s), 200)])
		}
	}
}
