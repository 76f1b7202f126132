package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/browsertest"
	"github.com/mqblast/mqblast/internal/fail"
	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/internal/tier"
	"github.com/mqblast/mqblast/report"
	"github.com/mqblast/mqblast/report/live"
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
// apart: more intervals, more points, at least two per interval in the throughput chart), a
// second
// tab opened later has the whole history at once, the page requests nothing but its own
// origin and logs no error; a rate changed through the API shows as a new stage (the stage
// table's row, a mark on the charts) at the next update; at the end it shows the final
// report (its verdicts, the stage).
func TestLivePage(t *testing.T) {
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	b := browsertest.Start(t)
	addr := fmt.Sprintf("127.0.0.1:%d", testbroker.FreePort(t, "127.0.0.1"))
	out := filepath.Join(t.TempDir(), "r.json")
	sp := quick("quick-p2p-100", m.Addr, "parameters.warmup_sec=0")
	sp.Duration, sp.NoCheck, sp.Procs = spec.Duration(11*time.Second), true, 1
	sp.Outputs = spec.Outputs{Out: out, Live: addr}
	const token = "page-token-7d1e"
	g := goSpec(context.Background(), t, sp, LiveTokenEnv+"="+token)
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
	if second.Points <= first.Points || first.Points < 2*first.Live.Intervals || second.Points < 2*second.Live.Intervals {
		t.Errorf("the throughput chart drew %d then %d points over %d then %d intervals, want more, at least 2 per interval",
			first.Points, second.Points, first.Live.Intervals, second.Live.Intervals)
	}
	if !strings.HasPrefix(second.Title, "mqblast live: ") {
		t.Errorf("title %q during the run", second.Title)
	}
	// A rate change is a new stage on the page at the next update.
	if code, body := api(t, "POST", "http://"+addr+"/api/rate", token, `{"publish_rate": 5}`); code != http.StatusOK {
		t.Fatalf("rate 5: %d %s", code, body)
	}
	const apiStage = `document.querySelector("#stages") && document.querySelector("#stages").textContent.includes("api: step to 5/s") &&
		(window.mqblast.charts.throughput.marks || []).includes("stage 1")`
	if _, err := waitEval(pg, apiStage); err != nil {
		t.Errorf("the page shows no stage of the API's rate: %v", err)
	}
	// A page opened later (as one that reconnects) has every interval at once.
	late := b.OpenURL(t, u, "window.mqblast && window.mqblast.live && window.mqblast.live.events >= 1")
	lp, now := browsertest.Eval[livePoints](late, livePointsJS), browsertest.Eval[livePoints](pg, livePointsJS)
	if lp.Live.Intervals < second.Live.Intervals || lp.Points < 2*lp.Live.Intervals {
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
	wantPoints := 0
	for _, c := range report.NewReport(res, "").Charts() {
		if c.ID == "throughput" {
			wantPoints = c.Points()
		}
	}
	for _, p := range []*browsertest.Page{pg, late} {
		if _, err := waitEval(p, "window.mqblast.live.done"); err != nil {
			t.Fatalf("the page did not get the run's end: %v", err)
		}
		end := browsertest.Eval[livePoints](p, livePointsJS)
		if !strings.HasPrefix(end.Title, "mqblast report: ") || end.Points != wantPoints {
			t.Errorf("at the end the page shows %q with %d points, want the report's %d", end.Title, end.Points, wantPoints)
		}
		if badge := browsertest.Eval[string](p, `document.querySelector("#summary .badge").textContent`); badge != "complete" {
			t.Errorf("the final report's first verdict is %q, want complete", badge)
		}
		if !browsertest.Eval[bool](p, "!!("+apiStage+")") || len(res.Stages) != 2 || res.Stages[1].Source != "api" {
			t.Errorf("the final report lacks the API's stage (result: %d stages)", len(res.Stages))
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
	code, b, err := live.Ask(context.Background(), method, u, token, body)
	if err != nil {
		t.Fatal(err)
	}
	return code, b
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

// TestLiveSteer: the live API changes the rate of a run against Mosquitto (100 publishers
// at 10 msg/s each), in one process and with two workers: bad rates and a pause or resume
// out of turn are refused with a reason; a rate of 5 is a new stage (source api) whose
// intervals publish 500 msg/s; a pause is a stage of rate 0 whose intervals publish nothing
// and in which nothing is lost; a resume goes back to 5; the live page lists the stages as
// they come; the result's stages say all of it and the document passes the audit. The
// rates measured per interval are the timing tier's assertions.
func TestLiveSteer(t *testing.T) {
	tier.Timing(t)
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	for _, procs := range []int{1, 2} {
		t.Run(fmt.Sprintf("procs=%d", procs), func(t *testing.T) { liveSteer(t, m.Addr, procs) })
	}
}

func liveSteer(t *testing.T, broker string, procs int) {
	tm := tier.Assert(t)
	addr := fmt.Sprintf("127.0.0.1:%d", testbroker.FreePort(t, "127.0.0.1"))
	out := filepath.Join(t.TempDir(), "r.json")
	const token = "steer-token-51ac"
	sp := quick("quick-p2p-100", broker, "parameters.warmup_sec=0")
	sp.Duration, sp.NoCheck, sp.Procs = spec.Duration(16*time.Second), true, spec.Procs(procs)
	sp.Outputs = spec.Outputs{Out: out, Live: addr}
	g := goSpec(context.Background(), t, sp, LiveTokenEnv+"="+token)
	testbroker.WaitListening(t, addr, 30*time.Second)
	base := "http://" + addr
	post := func(path, body string) (int, string) { return api(t, "POST", base+"/api/"+path, token, body) }
	// Until publishing starts, a change is refused: the run is not publishing.
	code, body := post("rate", `{"publish_rate": 5}`)
	if code != http.StatusConflict || !strings.Contains(body, "not publishing") {
		t.Errorf("rate 5 before publishing: %d %s", code, body)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		st := waitIntervals(t, base, token, 0)
		if st.Interval != nil && st.Interval.Stage != nil {
			break // publishing
		}
		if time.Now().After(deadline) {
			t.Fatal("the run did not publish in 30 s")
		}
	}
	time.Sleep(2500 * time.Millisecond)
	for deadline := time.Now().Add(30 * time.Second); ; {
		code, body := post("rate", `{"publish_rate": 5}`)
		if code == http.StatusOK {
			break
		}
		if code != http.StatusConflict || !strings.Contains(body, "not publishing") || time.Now().After(deadline) {
			t.Fatalf("rate 5: %d %s", code, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, c := range []struct{ path, body, want string }{
		{"rate", `{"publish_rate": 0}`, "above 0"},
		{"rate", `{"publish_rate": -3}`, "above 0"},
		{"rate", `{"publish_rate": 1e9}`, "above 10/s"},
		{"rate", `{"publish_rate": 10.5}`, "above 10/s"},
		{"rate", `{"rate": 5}`, "publish_rate"},
		{"rate", `not json`, "publish_rate"},
		{"resume", ``, "not paused"},
	} {
		code, body := post(c.path, c.body)
		if code/100 != 4 || !strings.Contains(body, c.want) {
			t.Errorf("POST /api/%s %s: %d %s, want a refusal saying %q", c.path, c.body, code, body, c.want)
		}
	}
	time.Sleep(4 * time.Second)
	if code, body := post("pause", ""); code != http.StatusOK || !strings.Contains(body, `"state":"paused"`) {
		t.Fatalf("pause: %d %s", code, body)
	}
	if code, body := post("pause", ""); code != http.StatusConflict || !strings.Contains(body, "paused already") {
		t.Errorf("a second pause: %d %s", code, body)
	}
	if code, body := post("rate", `{"publish_rate": 3}`); code != http.StatusConflict || !strings.Contains(body, "resume it first") {
		t.Errorf("a rate while paused: %d %s", code, body)
	}
	time.Sleep(4 * time.Second)
	// The live page lists the stages as they come.
	if _, page := api(t, "GET", base+"/", "", ""); !strings.Contains(page, "api: step to 5/s") || !strings.Contains(page, "api: step to 0/s") {
		t.Errorf("the live page does not list the API's stages")
	}
	if code, body := post("resume", ""); code != http.StatusOK || !strings.Contains(body, `"state":"running"`) {
		t.Fatalf("resume: %d %s", code, body)
	}
	st := waitIntervals(t, base, token, 0)
	if len(st.Changes) != 3 || st.Changes[0].Source != "api" {
		t.Errorf("status lists the changes %+v, want 3 by the api", st.Changes)
	}
	r := g.wait()
	if r.err != nil {
		t.Fatalf("%v\n%s", r.err, r.stderr)
	}
	doc, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := result.CheckDocument(doc); err != nil {
		t.Errorf("the document breaks an identity: %v", err)
	}
	res, err := result.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		rate   float64
		source string
	}{{10, ""}, {5, "api"}, {0, "api"}, {5, "api"}}
	if len(res.Stages) != len(want) {
		t.Fatalf("%d stages, want %d: %+v", len(res.Stages), len(want), res.Stages)
	}
	for i, st := range res.Stages {
		t.Logf("stage %d: %v/s by %q, %v–%vs, %d intervals, offered %.0f/s, written %.0f/s, arrived %.0f/s, lost %d",
			i, st.PublishRate, st.Source, st.StartS, st.StartS+st.DurationS, st.Intervals, st.OfferedPerS,
			st.Throughput.PublishPerS, st.Throughput.ReceivePerS, st.Messages.Lost)
		if st.PublishRate != want[i].rate || st.Source != want[i].source {
			t.Errorf("stage %d: rate %v source %q, want %v %q", i, st.PublishRate, st.Source, want[i].rate, want[i].source)
		}
		if i > 0 && math.Abs(st.StartS-(res.Stages[i-1].StartS+res.Stages[i-1].DurationS)) > 1e-6 {
			t.Errorf("stage %d starts at %vs, not where stage %d ends", i, st.StartS, i-1)
		}
	}
	if res.Messages.Lost != 0 || res.Messages.UnsentTotal != 0 {
		t.Errorf("the run lost %d and left %d unsent", res.Messages.Lost, res.Messages.UnsentTotal)
	}
	// Every interval inside a stage publishes at its rate: 100 publishers x the rate. The
	// intervals at a stage's edges may hold a few of the neighbour's messages: an
	// interval's figures are collected at its tick, a few ms after its boundary on a loaded
	// host, and a message due just before a boundary may be written just after it.
	counted := map[int]int{}
	for k, iv := range res.Intervals {
		if iv.Stage == nil || k+1 >= len(res.Intervals) || res.Intervals[k+1].Stage == nil {
			continue // outside publishing, or its last interval (cut by the end of publishing)
		}
		s := *iv.Stage
		counted[s]++
		wantN := 100 * want[s].rate
		edge := *res.Intervals[k+1].Stage != s || k == 0 || res.Intervals[k-1].Stage == nil || *res.Intervals[k-1].Stage != s
		switch {
		case wantN == 0 && !edge && (iv.Published != 0 || iv.Unsent != 0),
			wantN == 0 && edge && iv.Published > 25, // 50 ms of the neighbour's 500/s
			wantN > 0 && !edge && !within(float64(iv.Published), wantN, 0.03):
			tm.Errorf("interval at %.1fs in stage %d: published %d, unsent %d, want %v", iv.TS, s, iv.Published, iv.Unsent, wantN)
		}
	}
	for s := range want {
		if counted[s] < 3 {
			tm.Errorf("stage %d has %d whole intervals, want at least 3", s, counted[s])
		}
	}
	// The pause: nothing offered nor published but at its edge, and nothing lost but the
	// copies of those, which arrived in the next stage.
	if p := res.Stages[2]; p.Intervals < 3 || p.Messages.Published > 25 || p.Messages.Lost > p.Messages.Published || p.Messages.UnsentTotal != 0 {
		tm.Errorf("the pause: %d intervals, published %d, lost %d, unsent %d", p.Intervals, p.Messages.Published, p.Messages.Lost, p.Messages.UnsentTotal)
	}
}

// TestLiveStages: the live page of a staged run in two worker processes, without the API
// (no token: every API request is 403), lists the stages as they come.
func TestLiveStages(t *testing.T) {
	t.Parallel()
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	addr := fmt.Sprintf("127.0.0.1:%d", testbroker.FreePort(t, "127.0.0.1"))
	sp := &Spec{Scenario: spec.Scenario{Name: "stages", File: []byte(stagesP2P)}, Brokers: []string{m.Addr},
		Procs: 2, NoCheck: true, Stages: "3s:20,4s:10", Outputs: spec.Outputs{Format: "json", Live: addr}}
	g := goSpec(context.Background(), t, sp)
	testbroker.WaitListening(t, addr, 30*time.Second)
	if code, body := api(t, "GET", "http://"+addr+"/api/status", "x", ""); code != http.StatusForbidden {
		t.Errorf("status without a token set: %d %s, want 403", code, body)
	}
	seen := false
	for deadline := time.Now().Add(30 * time.Second); !seen && time.Now().Before(deadline); time.Sleep(300 * time.Millisecond) {
		_, page := api(t, "GET", "http://"+addr+"/", "", "")
		if strings.Contains(page, "<title>mqblast report:") {
			break // the run ended first
		}
		seen = strings.Contains(page, "step to 20/s") && strings.Contains(page, "step to 10/s")
	}
	if !seen {
		t.Errorf("the live page did not list both stages during the run")
	}
	t.Log("the live page listed both stages during the run")
	if r := g.wait(); r.err != nil {
		t.Fatalf("%v\n%s", r.err, r.stderr)
	}
}
