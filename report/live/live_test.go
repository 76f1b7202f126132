package live

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mqblast/mqblast/result"
)

// event is one server-sent event read from a stream.
type event struct {
	id, name string
	data     struct {
		Seq       int    `json:"seq"`
		Intervals int    `json:"intervals"`
		Done      bool   `json:"done"`
		Title     string `json:"title"`
		Main      string `json:"main"`
		Charts    []struct {
			ID string `json:"id"`
		} `json:"charts"`
	}
}

// readEvent reads the next event of the stream (comments skipped).
func readEvent(t *testing.T, br *bufio.Reader) event {
	t.Helper()
	var ev event
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("the stream ended: %v", err)
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "" && ev.name != "":
			return ev
		case strings.HasPrefix(line, "id: "):
			ev.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			ev.name = line[7:]
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(line[6:]), &ev.data); err != nil {
				t.Fatalf("event data: %v", err)
			}
		}
	}
}

// stream opens /events with lastID as Last-Event-ID ("": none).
func stream(t *testing.T, srv *httptest.Server, lastID string) (*bufio.Reader, func()) {
	t.Helper()
	req, _ := http.NewRequest("GET", srv.URL+"/events", nil)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	return bufio.NewReader(resp.Body), func() { _ = resp.Body.Close() }
}

func interval(ts float64) result.Interval {
	return result.Interval{TS: ts, Established: 10, Published: 100, Expected: 100, Received: 100, PublishPerS: 100, ReceivePerS: 100}
}

// TestEvents: a client gets the page as it stands when it connects and each update after;
// one that reconnects with the id it saw gets nothing it had, the next update at once; one
// that reconnects with an older id gets the page as it stands at once (the whole history:
// every interval); the run's end is the last event, and the stream ends after it.
func TestEvents(t *testing.T) {
	t.Parallel()
	l := New(&result.Result{Broker: []string{"127.0.0.1:1883"}, StartedAt: time.Now()})
	srv := httptest.NewServer(l.Handler())
	defer srv.Close()
	l.Interval(interval(1))
	br, closeA := stream(t, srv, "")
	ev := readEvent(t, br)
	if ev.name != "page" || ev.id != "1" || ev.data.Intervals != 1 || ev.data.Done || !strings.HasPrefix(ev.data.Title, "mqblast live: ") {
		t.Fatalf("first event: %s %s %+v", ev.name, ev.id, ev.data)
	}
	hasThroughput := false
	for _, c := range ev.data.Charts {
		hasThroughput = hasThroughput || c.ID == "throughput"
	}
	if !hasThroughput || !strings.Contains(ev.data.Main, `id="plot-throughput"`) {
		t.Errorf("the event has no throughput chart: %+v", ev.data.Charts)
	}
	l.Interval(interval(2))
	if ev = readEvent(t, br); ev.id != "2" || ev.data.Intervals != 2 {
		t.Fatalf("second event: %s %+v", ev.id, ev.data)
	}
	closeA() // the browser loses the connection; two intervals close meanwhile
	l.Interval(interval(3))
	l.Interval(interval(4))
	br, closeB := stream(t, srv, "2")
	defer closeB()
	if ev = readEvent(t, br); ev.id != "4" || ev.data.Intervals != 4 {
		t.Fatalf("after reconnecting with id 2: %s %+v, want the page with all 4 intervals", ev.id, ev.data)
	}
	br2, closeC := stream(t, srv, "4") // already current: nothing until the next update
	defer closeC()
	l.Line("warning: something the run said\n")
	l.Finish(&result.Result{Broker: []string{"127.0.0.1:1883"}, Intervals: []result.Interval{interval(1), interval(2), interval(3), interval(4), interval(5)}})
	for _, b := range []*bufio.Reader{br, br2} {
		ev = readEvent(t, b)
		if ev.id != "5" || !ev.data.Done || ev.data.Intervals != 5 || !strings.HasPrefix(ev.data.Title, "mqblast report: ") ||
			!strings.Contains(ev.data.Main, "warning: something the run said") {
			t.Errorf("the end's event: %s done=%v %q log in it %v", ev.id, ev.data.Done, ev.data.Title, strings.Contains(ev.data.Main, "something the run said"))
		}
		if rest, err := io.ReadAll(b); err != nil || len(rest) != 0 {
			t.Errorf("the stream went on after the end: %q %v", rest, err)
		}
	}
	// One that reconnects with the end's id has it all: its stream ends at once.
	br3, closeD := stream(t, srv, "5")
	defer closeD()
	done := make(chan string, 1)
	go func() {
		rest, _ := io.ReadAll(br3)
		done <- string(rest)
	}()
	select {
	case rest := <-done:
		if strings.Contains(rest, "event:") {
			t.Errorf("after the end's id, the stream sent %q", rest)
		}
	case <-time.After(5 * time.Second):
		t.Errorf("after the end's id, the stream did not end")
	}
}

// TestPage: GET / is the report page with the live script, whose policy lets it connect
// to its own origin only.
func TestPage(t *testing.T) {
	t.Parallel()
	l := New(&result.Result{StartedAt: time.Now()})
	l.Interval(interval(1))
	srv := httptest.NewServer(l.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	page := string(body)
	for _, want := range []string{`id="mqblast-main"`, `new EventSource("events")`, "connect-src &#39;self&#39;", `id="plot-throughput"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if resp, err := http.Get(srv.URL + "/nothing"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /nothing: %v %v", resp.StatusCode, err)
	}
}
