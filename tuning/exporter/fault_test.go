package exporter

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func serve(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func scraperFor(t *testing.T, urls []string, o Options) *Scraper {
	t.Helper()
	s, err := New(urls, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// oneLine fails the test unless err is one line of printable text holding want.
func oneLine(t *testing.T, what, err, want string) {
	t.Helper()
	if !strings.Contains(err, want) {
		t.Errorf("%s: Err %q, want it to say %q", what, err, want)
	}
	for _, r := range err {
		if r < 0x20 || r == 0x7f {
			t.Errorf("%s: Err %q holds a control character", what, err)
			break
		}
	}
}

const good = "# TYPE up gauge\nup 1\n"

// TestSlowEndpoint: an endpoint that does not answer, or stops in the middle of its
// body, costs a scrape its timeout and no more; the other URL of the same scrape is read.
// The bounds are the scraper's own: the two stalled URLs are waited for at once, so a scrape
// that waited for them one after the other (two timeouts) or for the endpoints (5 s) fails,
// and a scheduler slow by less than a timeout (a loaded CI host) does not.
func TestSlowEndpoint(t *testing.T) {
	t.Parallel()
	stall := func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}
	silent := serve(t, stall)
	halfway := serve(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("# TYPE up gauge\nup"))
		w.(http.Flusher).Flush()
		stall(w, r)
	})
	fast := serve(t, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(good)) })
	const timeout = 300 * time.Millisecond
	s := scraperFor(t, []string{silent.URL, halfway.URL, fast.URL}, Options{Timeout: timeout, Series: []string{"up"}})
	for range 2 {
		start := time.Now()
		r := s.Scrape(context.Background())
		if took := time.Since(start); took < timeout || took >= 2*timeout {
			t.Errorf("scrape took %v, want its timeout %v and less than two", took, timeout)
		}
		oneLine(t, "silent", r.Targets[0].Err, "timeout after 300ms")
		oneLine(t, "halfway", r.Targets[1].Err, "timeout after 300ms reading the body")
		if r.Targets[2].Err != "" || r.Series["up"].Value != 1 {
			t.Errorf("fast endpoint: %+v, series %v", r.Targets[2], r.Series)
		}
	}
	// Canceled well before its timeout, a scrape returns at once: one that waited for its
	// timeout would take 5 s.
	const long = 5 * time.Second
	s = scraperFor(t, []string{silent.URL}, Options{Timeout: long, Series: []string{"up"}})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	start := time.Now()
	r := s.Scrape(ctx)
	if took := time.Since(start); took >= long/2 {
		t.Errorf("scrape canceled after 50ms returned after %v, its timeout %v", took, long)
	}
	oneLine(t, "canceled", r.Targets[0].Err, "canceled")
}

// TestNotPrometheusText: an HTML page, a JSON document and a body whose bad line holds
// terminal escapes each fail in one escaped line that says where.
func TestNotPrometheusText(t *testing.T) {
	t.Parallel()
	bodies := map[string]struct{ ct, body, want string }{
		"html": {"text/html; charset=utf-8", "<!DOCTYPE html>\n<html><body>Grafana</body></html>\n",
			"not Prometheus text (Content-Type text/html): line 1: "},
		"json":   {"application/json", `{"status":"success"}`, "not Prometheus text (Content-Type application/json): line 1: "},
		"escape": {"text/plain", good + "up{a=\"\x1b]0;pwned\x07\"} x\x1b[2J" + strings.Repeat("y", 500) + "\n", `not Prometheus text: line 3: expected float as value, got "x\x1b[2Jyyy`},
	}
	for name, b := range bodies {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", b.ct)
				_, _ = w.Write([]byte(b.body))
			})
			r := scraperFor(t, []string{srv.URL}, Options{}).Scrape(context.Background())
			oneLine(t, name, r.Targets[0].Err, b.want)
			if len(r.Targets[0].Err) > 300 {
				t.Errorf("Err is %d bytes: %q", len(r.Targets[0].Err), r.Targets[0].Err)
			}
			t.Log(r.Targets[0].Err)
		})
	}
}

// TestBodyOverLimit: a 50 MB body is cut at MaxBody, and the endpoint cannot make the
// scraper read it all; a gzip bomb is never inflated (no compression is asked for).
func TestBodyOverLimit(t *testing.T) {
	t.Parallel()
	const size = 50 << 20
	line := []byte("some_metric_with_a_long_name{label=\"value\"} 1\n")
	var written atomic.Int64
	plain := serve(t, func(w http.ResponseWriter, r *http.Request) {
		for written.Load() < size {
			n, err := w.Write(bytes.Repeat(line, 1000))
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	})
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	for i := 0; i < size/len(line); i++ {
		_, _ = zw.Write(line)
	}
	_ = zw.Close()
	var acceptEncoding atomic.Value
	gz := serve(t, func(w http.ResponseWriter, r *http.Request) {
		acceptEncoding.Store(r.Header.Get("Accept-Encoding"))
		w.Header().Set("Content-Encoding", "gzip")
		_, _ = w.Write(zipped.Bytes())
	})
	s := scraperFor(t, []string{plain.URL, gz.URL}, Options{Timeout: 5 * time.Second})
	r := s.Scrape(context.Background())
	oneLine(t, "plain", r.Targets[0].Err, "body over 16777216 bytes")
	oneLine(t, "gzip", r.Targets[1].Err, "not Prometheus text: line 1")
	if ae := acceptEncoding.Load(); ae != "" {
		t.Errorf("Accept-Encoding %q: the scraper asks for no compression", ae)
	}
	// The loopback socket buffers hold a few MB beyond what was read.
	if w := written.Load(); w >= size || w > 16<<20+16<<20 {
		t.Errorf("the endpoint wrote %d bytes of %d: the scraper read past its limit", w, size)
	}
	for i, b := range s.bufs {
		if b.Cap() > keepBuf {
			t.Errorf("URL %d: a %d-byte buffer kept after an oversized body", i, b.Cap())
		}
	}
	s2 := scraperFor(t, []string{plain.URL}, Options{MaxBody: 1000})
	oneLine(t, "small limit", s2.Scrape(context.Background()).Targets[0].Err, "body over 1000 bytes")
}

// TestCredentials: basic auth and a bearer token are sent on every request; a refused
// one fails with the status and a hint, and neither the secret nor the Authorization
// header shows in the reading, its error or its %+v.
func TestCredentials(t *testing.T) {
	t.Parallel()
	const user, pass, token = "scraper", "pa55-w0rd-secret", "t0ken-secret-xyz"
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if (ok && u == user && p == pass) || r.Header.Get("Authorization") == "Bearer "+token {
			_, _ = w.Write([]byte(good))
			return
		}
		w.Header().Set("WWW-Authenticate", `Basic realm="metrics"`)
		http.Error(w, "Unauthorized "+r.Header.Get("Authorization"), http.StatusUnauthorized)
	})
	secrets := []string{pass, token, base64.StdEncoding.EncodeToString([]byte(user + ":" + pass)), "Authorization"}
	check := func(name string, a Auth, wantErr string) {
		t.Helper()
		s := scraperFor(t, []string{srv.URL}, Options{Auth: a})
		for range 2 { // every request carries them, the kept connection's too
			r := s.Scrape(context.Background())
			if wantErr == "" && r.Targets[0].Err != "" {
				t.Errorf("%s: %s", name, r.Targets[0].Err)
			}
			if wantErr != "" {
				oneLine(t, name, r.Targets[0].Err, wantErr)
			}
			all := fmt.Sprintf("%+v %v %+v %v", r, r, s.o, s.o.Auth)
			for _, sec := range secrets {
				if strings.Contains(all, sec) {
					t.Errorf("%s: %q shows in the reading or options: %s", name, sec, all)
				}
			}
		}
	}
	check("basic", Auth{Username: user, Password: pass}, "")
	check("bearer", Auth{BearerToken: token}, "")
	check("wrong password", Auth{Username: user, Password: pass + "x"}, "HTTP 401 Unauthorized: check the credentials (scraper:<redacted>)")
	check("wrong token", Auth{BearerToken: token + "x"}, "HTTP 401 Unauthorized: check the credentials (bearer <redacted>)")
	check("none", Auth{}, "HTTP 401 Unauthorized: the endpoint wants credentials")
}

// TestRedirectNotFollowed: a redirect is reported, and the credentials do not follow it.
func TestRedirectNotFollowed(t *testing.T) {
	t.Parallel()
	var leaked atomic.Bool
	other := serve(t, func(w http.ResponseWriter, r *http.Request) {
		leaked.Store(r.Header.Get("Authorization") != "")
		_, _ = w.Write([]byte(good))
	})
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/metrics", http.StatusFound)
	})
	r := scraperFor(t, []string{srv.URL}, Options{Auth: Auth{BearerToken: "secret"}}).Scrape(context.Background())
	oneLine(t, "redirect", r.Targets[0].Err, "HTTP 302 Found: the endpoint redirects to "+other.URL+"/metrics: give that URL")
	if leaked.Load() {
		t.Error("the credentials followed the redirect")
	}
}

// TestEndpointRestarts: a scrape after the endpoint is killed fails, one after it is back
// on the same address succeeds, and its counters, which started again, give no rate for
// that span.
func TestEndpointRestarts(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	var count atomic.Int64
	count.Store(1000)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "# TYPE broker_msgs_total counter\nbroker_msgs_total %d\nbroker_clients 3\n", count.Add(100))
	})
	start := func(l net.Listener) *httptest.Server {
		srv := httptest.NewUnstartedServer(h)
		srv.Listener = l
		srv.Start()
		return srv
	}
	srv := start(l)
	s := scraperFor(t, []string{"http://" + addr + "/metrics"}, Options{Series: []string{"broker_msgs_total", "broker_clients"}})
	r0 := s.Scrape(context.Background())
	time.Sleep(20 * time.Millisecond)
	r1 := s.Scrape(context.Background())
	if r0.Targets[0].Err != "" || r1.Targets[0].Err != "" {
		t.Fatal(r0.Targets[0].Err, r1.Targets[0].Err)
	}
	if rate := Between(r0, r1).Series["broker_msgs_total"]; rate <= 0 {
		t.Errorf("rate %v before the restart", rate)
	}
	srv.Close()
	r2 := s.Scrape(context.Background())
	oneLine(t, "killed", r2.Targets[0].Err, "connection refused: is the exporter running")
	if len(r2.Series) != 0 {
		t.Errorf("series from a dead endpoint: %v", r2.Series)
	}
	l, err = net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	count.Store(0) // the exporter started again
	srv = start(l)
	t.Cleanup(srv.Close)
	r3 := s.Scrape(context.Background())
	if r3.Targets[0].Err != "" || r3.Series["broker_msgs_total"].Value != 100 {
		t.Fatalf("after the restart: %+v %v", r3.Targets[0], r3.Series)
	}
	rates := Between(r1, r3)
	if _, ok := rates.Series["broker_msgs_total"]; ok || rates.Series["broker_clients"] != 3 {
		t.Errorf("across the restart: %v: want no counter rate, the gauge", rates.Series)
	}
	if rate := Between(r3, s.Scrape(context.Background())).Series["broker_msgs_total"]; rate <= 0 {
		t.Errorf("rate %v after the restart", rate)
	}
}

// TestStatusErrors: other non-2xx answers give the status, and a hint where one helps.
func TestStatusErrors(t *testing.T) {
	t.Parallel()
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/boom" {
			http.Error(w, "boom", http.StatusInternalServerError)
			return
		}
		http.NotFound(w, r)
	})
	r := scraperFor(t, []string{srv.URL + "/boom", srv.URL + "/metricz"}, Options{}).Scrape(context.Background())
	oneLine(t, "500", r.Targets[0].Err, "HTTP 500 Internal Server Error")
	oneLine(t, "404", r.Targets[1].Err, "HTTP 404 Not Found: check the path")

	// A reason phrase with a terminal escape, from a server that is not net/http's.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = c.Read(make([]byte, 4096))
			_, _ = c.Write([]byte("HTTP/1.1 503 Busy\x1b]0;pwned\x07\r\nContent-Length: 0\r\n\r\n"))
			_ = c.Close()
		}
	}()
	r = scraperFor(t, []string{"http://" + l.Addr().String() + "/metrics"}, Options{}).Scrape(context.Background())
	oneLine(t, "escaped status", r.Targets[0].Err, `HTTP 503 Busy\x1b]0;pwned\x07`)
}

// TestKeptConnectionReset: an endpoint that resets a kept connection as the next request
// arrives costs the scrape a retry on a new connection (net/http's), not a failure; a new
// connection reset at once is a failure.
func TestKeptConnectionReset(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	var conns, resetFirst atomic.Int64
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func(c *net.TCPConn) {
				defer c.Close()
				buf := make([]byte, 4096)
				for n := 0; ; n++ {
					if _, err := c.Read(buf); err != nil {
						return
					}
					if n == 1 || resetFirst.Load() == 1 { // the kept connection's second request
						_ = c.SetLinger(0)
						return
					}
					_, _ = fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(good), good)
				}
			}(c.(*net.TCPConn))
		}
	}()
	s := scraperFor(t, []string{"http://" + l.Addr().String() + "/metrics"}, Options{})
	for i := range 3 {
		if r := s.Scrape(context.Background()); r.Targets[0].Err != "" {
			t.Errorf("scrape %d: %s", i, r.Targets[0].Err)
		}
	}
	// Each kept connection is reset at its second request: scrapes 1 and 2 retried.
	if n := conns.Load(); n != 3 {
		t.Errorf("%d connections for 3 scrapes: want 3", n)
	}
	s.Close()
	resetFirst.Store(1)
	oneLine(t, "reset", s.Scrape(context.Background()).Targets[0].Err, "connection reset by peer")
}
