package live

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mqblast/mqblast/report"
	"github.com/mqblast/mqblast/result"
)

// maxLines is how many log lines the page keeps (the last ones).
const maxLines = 200

// Live is a run's live page: what the run told it so far, and the page built from it.
type Live struct {
	mu    sync.Mutex
	base  result.Result // the run's identity: broker, scenario, start, version
	ivs   []result.Interval
	lines []string
	final *result.Result
	// seq numbers the updates; event is the current one's data, built at most once per
	// update (page builds it when asked and it is stale).
	seq       int
	built     int
	event     []byte
	eventDone bool          // the event is the run's end
	buildMu   sync.Mutex    // one build at a time
	notify    chan struct{} // closed and replaced at each update
	closed    chan struct{} // closed by Close: the streams end
	drop      chan struct{} // closed and replaced by dropStreams: the streams end at once
	once      sync.Once

	control Control
	token   string
	state   string // running, paused, stopping, done
	changes []Change
}

// New returns the live page of a run: base carries what the page names from the start (its
// Broker, Scenario, StartedAt, ToolVersion); its intervals and figures are ignored.
func New(base *result.Result) *Live {
	l := &Live{notify: make(chan struct{}), closed: make(chan struct{}), drop: make(chan struct{}), state: "running", built: -1}
	if base != nil {
		l.SetBase(base)
	}
	return l
}

// Interval adds an interval that closed (its histograms are not kept).
func (l *Live) Interval(iv result.Interval) {
	iv.Histograms = nil
	l.mu.Lock()
	l.ivs = append(l.ivs, iv)
	l.updateLocked()
	l.mu.Unlock()
}

// Line adds a line of the run's log (a notice, a verdict), shown with the next update.
func (l *Live) Line(s string) {
	s = strings.TrimRight(s, "\r\n")
	if i := strings.LastIndexByte(s, '\r'); i >= 0 { // a progress bar's last state
		s = s[i+1:]
	}
	if strings.TrimSpace(s) == "" {
		return
	}
	l.mu.Lock()
	l.lines = append(l.lines, s)
	if n := len(l.lines); n > maxLines {
		l.lines = append(l.lines[:0], l.lines[n-maxLines:]...)
	}
	l.mu.Unlock()
}

// Finish gives the page the run's result: it shows its final report from now on.
func (l *Live) Finish(res *result.Result) {
	l.mu.Lock()
	l.final = res
	l.state = "done"
	l.updateLocked()
	l.mu.Unlock()
}

// Close ends the event streams (each sends the page as it stands first): call it before
// closing the server.
func (l *Live) Close() {
	l.once.Do(func() { close(l.closed) })
}

// dropStreams ends every event stream at once, as a lost connection would.
func (l *Live) dropStreams() {
	l.mu.Lock()
	close(l.drop)
	l.drop = make(chan struct{})
	l.mu.Unlock()
}

func (l *Live) updateLocked() {
	l.seq++
	close(l.notify)
	l.notify = make(chan struct{})
}

// view is what the page is built from, taken under the lock (viewLocked) so that the
// build runs without it: the interval loop that feeds the page never waits for a build.
type view struct {
	seq     int
	base    result.Result
	ivs     []result.Interval // append-only: the intervals so far, not changed after
	lines   []string
	changes []Change
	final   *result.Result
	state   string
	control Control
}

func (l *Live) viewLocked() view {
	return view{seq: l.seq, base: l.base, ivs: l.ivs[:len(l.ivs):len(l.ivs)], lines: slices.Clone(l.lines),
		changes: slices.Clone(l.changes), final: l.final, state: l.state, control: l.control}
}

// sofar is the result the page is built from: the final one, or one with the intervals so
// far (its totals are not known yet).
func (v *view) sofar() *result.Result {
	if v.final != nil {
		return v.final
	}
	r := v.base
	r.Intervals = v.ivs
	m := &r.Messages
	for i := range v.ivs {
		iv := &v.ivs[i]
		m.Published += iv.Published
		m.Received += iv.Received
		m.Expected += iv.Expected
		m.Duplicated += iv.Duplicated
	}
	if n := len(v.ivs); n > 0 {
		last := &v.ivs[n-1]
		r.EndedAt = r.StartedAt.Add(time.Duration(last.TS * float64(time.Second)))
		r.Connections.Established = last.Established
	}
	if v.control != nil {
		r.Stages = stagesSoFar(v.control.Stages(), v.ivs)
		r.SummarizeStages()
	}
	return &r
}

// stagesSoFar places the stages defs that have intervals in the intervals' time: each from
// the start of its first interval for its duration.
func stagesSoFar(defs []result.Stage, ivs []result.Interval) []result.Stage {
	var out []result.Stage
	for _, st := range defs {
		first := -1
		for k := range ivs {
			if s := ivs[k].Stage; s != nil && *s == st.Index {
				first = k
				break
			}
		}
		if first < 0 || st.Index != len(out) {
			break
		}
		from := ivs[first].TS - 1
		if first > 0 {
			from = ivs[first-1].TS
		}
		st.FromS, st.ToS = from, from+st.DurationS // to its planned end: the charts show the whole run
		out = append(out, st)
	}
	return out
}

// page builds the page as it stands: the report of the result so far, its summary saying
// the run is under way, with its last interval's figures and the log's lines.
func (v *view) page() (*report.Page, *result.Result) {
	r := v.sofar()
	p := report.NewReport(r, "")
	if v.final == nil {
		p.Title = "mqblast live: " + strings.TrimPrefix(p.Title, "mqblast report: ")
		if len(p.Panels) > 0 && p.Panels[0].ID == "summary" {
			sum := &p.Panels[0]
			sum.Badges = []report.Badge{{Text: v.state + fmt.Sprintf(": %d intervals so far", len(v.ivs)), Class: "warn"}}
			sum.Rows = intervalRows(v.ivs)
			sum.Lists, sum.Tables = nil, nil
			sum.Intro = "The run is under way: this page follows it interval by interval; its totals and verdicts come with the final report at its end."
		}
	}
	if len(v.changes) > 0 {
		p.Panels = append(p.Panels, changesPanel(v.changes))
	}
	if len(v.lines) > 0 {
		p.Panels = append(p.Panels, report.Panel{ID: "log", Title: "Log", Pre: strings.Join(v.lines, "\n")})
	}
	return p, r
}

// intervalRows are the figures of the last interval.
func intervalRows(ivs []result.Interval) []report.Row {
	if len(ivs) == 0 {
		return []report.Row{{Key: "intervals", Value: "none closed yet"}}
	}
	iv := &ivs[len(ivs)-1]
	row := func(k, f string, a ...any) report.Row { return report.Row{Key: k, Value: fmt.Sprintf(f, a...)} }
	rows := []report.Row{
		row("last interval", "ends %.1fs into the run", iv.TS),
		row("connections", "%d established, %d failed, %d dropped", iv.Established, iv.Failed, iv.Dropped),
		row("messages", "%d published (%.0f/s), %d unsent; %d expected, %d received (%.0f/s)",
			iv.Published, iv.PublishPerS, iv.Unsent, iv.Expected, iv.Received, iv.ReceivePerS),
		row("latency", "p50 %s · p99 %s · max %s", report.FormatUS(iv.LatencyUS.P50), report.FormatUS(iv.LatencyUS.P99), report.FormatUS(iv.LatencyUS.Max)),
		row("client", "cpu %.0f%%, rss %.1f MiB", iv.ClientCPUPercent, float64(iv.ClientRSSBytes)/(1<<20)),
	}
	if iv.Stage != nil {
		rows = append(rows, row("stage", "%d, offered %.0f/s", *iv.Stage, iv.OfferedPerS))
	}
	return rows
}

// eventData returns the current update's event data (its number, and whether it is the
// run's end), built if stale. Builds run one at a time, without the lock.
func (l *Live) eventData() (int, []byte, bool, error) {
	l.buildMu.Lock()
	defer l.buildMu.Unlock()
	l.mu.Lock()
	if l.built == l.seq {
		seq, b, done := l.built, l.event, l.eventDone
		l.mu.Unlock()
		return seq, b, done, nil
	}
	v := l.viewLocked()
	l.mu.Unlock()
	p, r := v.page()
	part, err := report.NewLivePart(p)
	if err != nil {
		return 0, nil, false, err
	}
	done := v.final != nil
	b, err := json.Marshal(struct {
		Seq       int  `json:"seq"`
		Intervals int  `json:"intervals"`
		Done      bool `json:"done"`
		report.LivePart
	}{v.seq, len(r.Intervals), done, part})
	if err != nil {
		return 0, nil, false, fmt.Errorf("cannot encode the live page: %w", err)
	}
	l.mu.Lock()
	l.event, l.built, l.eventDone = b, v.seq, done
	l.mu.Unlock()
	return v.seq, b, done, nil
}

// Handler serves the page, its events and the API.
func (l *Live) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", l.servePage)
	mux.HandleFunc("GET /events", l.serveEvents)
	l.api(mux)
	return mux
}

func (l *Live) servePage(w http.ResponseWriter, _ *http.Request) {
	l.mu.Lock()
	v := l.viewLocked()
	l.mu.Unlock()
	p, r := v.page()
	var b bytes.Buffer
	err := report.WriteLivePage(&b, p, r, r.ToolVersion)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b.Bytes())
}

// heartbeat is how often an idle stream sends a comment, so that a proxy keeps it.
const heartbeat = 15 * time.Second

func (l *Live) serveEvents(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, _ = fmt.Fprint(w, "retry: 1000\n\n") // a lost connection is retried after a second
	fl.Flush()
	sent := -1
	if id, err := strconv.Atoi(r.Header.Get("Last-Event-ID")); err == nil {
		sent = id
	}
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	for {
		l.mu.Lock()
		seq, notify, drop, done := l.seq, l.notify, l.drop, l.final != nil && l.seq == sent
		l.mu.Unlock()
		if seq != sent {
			var data []byte
			var err error
			if seq, data, done, err = l.eventData(); err != nil {
				return
			}
			if _, err := fmt.Fprintf(w, "id: %d\nevent: page\ndata: %s\n\n", seq, data); err != nil {
				return
			}
			fl.Flush()
			sent = seq
		}
		if done {
			return
		}
		select {
		case <-notify:
		case <-tick.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return
			}
			fl.Flush()
		case <-l.closed:
			l.mu.Lock()
			stale := l.seq != sent
			l.mu.Unlock()
			if !stale {
				return
			}
		case <-drop:
			return
		case <-r.Context().Done():
			return
		}
	}
}

// SetBase sets what the page names from the start: base's Broker, Scenario, StartedAt and
// ToolVersion.
func (l *Live) SetBase(base *result.Result) {
	l.mu.Lock()
	l.base = result.Result{Schema: base.Schema, Broker: base.Broker, Scenario: base.Scenario,
		StartedAt: base.StartedAt, ToolVersion: base.ToolVersion}
	l.mu.Unlock()
}

// Done reports whether the page has the run's final result.
func (l *Live) Done() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.final != nil
}
