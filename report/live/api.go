package live

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/mqblast/mqblast/report"
	"github.com/mqblast/mqblast/result"
)

// Control carries out the steering API's changes in the run. Each method returns an error
// that says why a change was refused (ErrRefused wraps a request that cannot be done: the
// API answers 409 with it), or how it failed.
type Control interface {
	// SetRate sets each publisher's rate (messages per second) from now on.
	SetRate(perPublisher float64) error
	// Pause stops publishing until Resume; the connections stay up.
	Pause() error
	// Resume publishes again at the rate before the pause.
	Resume() error
	// Stop ends the run as an interrupt does: it drains and writes the result.
	Stop() error
	// Stages returns the run's stages as they stand, their definitions only (index, rate,
	// ramp, start and duration from the start of publishing, source); nil: none yet.
	Stages() []result.Stage
}

// ErrRefused marks a change the run cannot make as asked (a bad rate, a pause when
// paused): the API answers 409 Conflict, or 400 for a request it cannot read.
var ErrRefused = errors.New("refused")

// Change is one change the API made, as the live page lists it.
type Change struct {
	At     time.Time `json:"at"`
	What   string    `json:"what"`
	Source string    `json:"source"`
}

// SetControl makes the API steer the run through c, with token as its bearer token ("":
// every API request is refused).
func (l *Live) SetControl(c Control, token string) {
	l.mu.Lock()
	l.control, l.token = c, token
	l.mu.Unlock()
}

// Status is GET /api/status's answer.
type Status struct {
	// State is running, paused, stopping or done.
	State string `json:"state"`
	// Intervals is how many intervals have closed; Interval the last one (nil: none yet).
	Intervals int              `json:"intervals"`
	Interval  *result.Interval `json:"interval,omitempty"`
	// Changes are the API's changes so far.
	Changes []Change `json:"changes,omitempty"`
}

func (l *Live) api(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/status", l.auth(l.status))
	mux.HandleFunc("POST /api/rate", l.auth(l.rate))
	mux.HandleFunc("POST /api/pause", l.auth(l.change("pause", "paused", func(c Control) error { return c.Pause() })))
	mux.HandleFunc("POST /api/resume", l.auth(l.change("resume", "running", func(c Control) error { return c.Resume() })))
	mux.HandleFunc("POST /api/stop", l.auth(l.change("stop", "stopping", func(c Control) error { return c.Stop() })))
}

// auth answers a request without the run's token: 403 when the run has none, 401 when it
// is wrong or missing. The token given is never written anywhere.
func (l *Live) auth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		token := l.token
		l.mu.Unlock()
		if token == "" {
			apiError(w, http.StatusForbidden, "the steering API is off: the run was given no token (--live-token-file or $MQBLAST_LIVE_TOKEN)")
			return
		}
		given, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(given), []byte(token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="mqblast"`)
			apiError(w, http.StatusUnauthorized, "a wrong or missing token: give the run's as Authorization: Bearer TOKEN")
			return
		}
		h(w, r)
	}
}

func apiError(w http.ResponseWriter, code int, msg string) {
	apiJSON(w, code, map[string]string{"error": msg})
}

func apiJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func (l *Live) status(w http.ResponseWriter, _ *http.Request) {
	l.mu.Lock()
	st := Status{State: l.state, Intervals: len(l.ivs), Changes: append([]Change(nil), l.changes...)}
	if n := len(l.ivs); n > 0 {
		iv := l.ivs[n-1]
		st.Interval = &iv
	}
	l.mu.Unlock()
	apiJSON(w, http.StatusOK, st)
}

// rateRequest is POST /api/rate's body.
type rateRequest struct {
	// PublishRate is each publisher's rate, messages per second.
	PublishRate *float64 `json:"publish_rate"`
}

func (l *Live) rate(w http.ResponseWriter, r *http.Request) {
	var req rateRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || req.PublishRate == nil {
		apiError(w, http.StatusBadRequest, `want a JSON body {"publish_rate": N}: each publisher's messages per second`)
		return
	}
	v := *req.PublishRate
	l.change(fmt.Sprintf("rate %g/s per publisher", v), "", func(c Control) error { return c.SetRate(v) })(w, r)
}

// change carries out one change through the run's Control: what names it, state is the
// run's state after it ("": unchanged).
func (l *Live) change(what, state string, do func(Control) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		c, cur := l.control, l.state
		l.mu.Unlock()
		if c == nil || cur == "done" || cur == "stopping" {
			apiError(w, http.StatusConflict, fmt.Sprintf("%s: the run cannot be changed now (%s)", what, cmpOr(cur, "not steerable")))
			return
		}
		if err := do(c); err != nil {
			code := http.StatusInternalServerError
			if errors.Is(err, ErrRefused) {
				code = http.StatusConflict
			}
			apiError(w, code, err.Error())
			return
		}
		l.mu.Lock()
		if state != "" && l.state != "done" {
			l.state = state
		}
		l.mu.Unlock()
		l.Record(what, "api")
		l.status(w, r)
	}
}

// Record notes a change on the page (and in status): what it was, who made it.
func (l *Live) Record(what, source string) {
	l.mu.Lock()
	l.changes = append(l.changes, Change{At: time.Now().UTC(), What: what, Source: source})
	l.mu.Unlock()
}

// changesPanel lists the API's changes.
func changesPanel(cs []Change) report.Panel {
	t := report.Table{Head: []string{"at", "change", "source"}}
	for _, c := range cs {
		t.Rows = append(t.Rows, []string{c.At.Format("15:04:05.000"), c.What, c.Source})
	}
	return report.Panel{ID: "changes", Title: "Changes", Intro: "What the steering API changed during the run.", Tables: []report.Table{t}}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
