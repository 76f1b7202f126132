package live

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mqblast/mqblast/result"
)

// fakeControl is a run's Control that records what it was asked.
type fakeControl struct {
	asked  []string
	refuse error
}

func (f *fakeControl) SetRate(r float64) error { return f.do(fmt.Sprintf("rate %v", r)) }
func (f *fakeControl) Pause() error            { return f.do("pause") }
func (f *fakeControl) Resume() error           { return f.do("resume") }
func (f *fakeControl) Stop() error             { return f.do("stop") }
func (f *fakeControl) Stages() []result.Stage  { return nil }

func (f *fakeControl) do(what string) error {
	if f.refuse != nil {
		return f.refuse
	}
	f.asked = append(f.asked, what)
	return nil
}

func call(t *testing.T, srv *httptest.Server, method, path, token, body string) (int, string) {
	t.Helper()
	code, b, err := Ask(context.Background(), method, srv.URL+path, token, body)
	if err != nil {
		t.Fatal(err)
	}
	return code, b
}

// TestAPIAuth: without a token the API refuses everything (403); a wrong or missing token
// is refused (401) and appears in no answer and no log line of the server; the right one
// reaches the run's Control, whose refusal is a 409 with its reason; a body that is not a
// rate is a 400; nothing is changed once the run is done.
func TestAPIAuth(t *testing.T) {
	t.Parallel()
	var logged bytes.Buffer
	l := New(&result.Result{})
	srv := httptest.NewUnstartedServer(l.Handler())
	srv.Config.ErrorLog = log.New(&logged, "", 0)
	srv.Start()
	defer srv.Close()
	c := &fakeControl{}
	l.SetControl(c, "")
	if code, body := call(t, srv, "GET", "/api/status", "anything", ""); code != http.StatusForbidden || !strings.Contains(body, "no token") {
		t.Errorf("no token set: %d %s", code, body)
	}
	const token, wrong = "right-0d5f", "wrong-77a1"
	l.SetControl(c, token)
	for _, tok := range []string{wrong, ""} {
		for _, r := range [][2]string{{"GET", "/api/status"}, {"POST", "/api/rate"}, {"POST", "/api/pause"}, {"POST", "/api/resume"}, {"POST", "/api/stop"}} {
			code, body := call(t, srv, r[0], r[1], tok, `{"publish_rate": 1}`)
			if code != http.StatusUnauthorized || strings.Contains(body, wrong) {
				t.Errorf("%s %s with %q: %d %s", r[0], r[1], tok, code, body)
			}
		}
	}
	if len(c.asked) != 0 {
		t.Errorf("refused requests reached the run: %q", c.asked)
	}
	if code, body := call(t, srv, "POST", "/api/rate", token, `{"publish_rate": 7.5}`); code != http.StatusOK || !strings.Contains(body, "rate 7.5/s per publisher") {
		t.Errorf("rate: %d %s", code, body)
	}
	for _, b := range []string{``, `{}`, `{"publish_rate": "5"}`, `{"publish_rate": 5, "x": 1}`} {
		if code, _ := call(t, srv, "POST", "/api/rate", token, b); code != http.StatusBadRequest {
			t.Errorf("rate %q: %d, want 400", b, code)
		}
	}
	if code, body := call(t, srv, "POST", "/api/pause", token, ""); code != http.StatusOK || !strings.Contains(body, `"state":"paused"`) {
		t.Errorf("pause: %d %s", code, body)
	}
	c.refuse = fmt.Errorf("%w: publishing is paused already", ErrRefused)
	if code, body := call(t, srv, "POST", "/api/pause", token, ""); code != http.StatusConflict || !strings.Contains(body, "paused already") {
		t.Errorf("a refused pause: %d %s", code, body)
	}
	c.refuse = nil
	if code, _ := call(t, srv, "GET", "/api/rate", token, ""); code != http.StatusMethodNotAllowed {
		t.Errorf("GET /api/rate: %d, want 405", code)
	}
	l.Finish(&result.Result{})
	if code, body := call(t, srv, "POST", "/api/stop", token, ""); code != http.StatusConflict || !strings.Contains(body, "done") {
		t.Errorf("stop after the end: %d %s", code, body)
	}
	if want := []string{"rate 7.5", "pause"}; fmt.Sprint(c.asked) != fmt.Sprint(want) {
		t.Errorf("the run was asked %q, want %q", c.asked, want)
	}
	if s := logged.String(); strings.Contains(s, wrong) || strings.Contains(s, token) {
		t.Errorf("the server logged a token: %q", s)
	}
}
