package run

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/promtest"
	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/internal/tier"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/run/spec"
)

// remoteSpec is a short run against Mosquitto that pushes to url, its document on stdout.
func remoteSpec(t *testing.T, url string, d time.Duration) *Spec {
	t.Helper()
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	sp := quick("quick-p2p-100", m.Addr, "parameters.payload_size=32", "parameters.warmup_sec=1")
	sp.Duration, sp.Procs, sp.Outputs.Format = spec.Duration(d), 1, "json"
	sp.Outputs.RemoteWrite = url
	return sp
}

// pushed returns the points Prometheus holds of the pushed series sel (a name, or a name
// and an open brace with matchers and a comma), the job's, in time order.
func pushed(t *testing.T, p *promtest.Prometheus, sel string) []promtest.Sample {
	t.Helper()
	if !strings.Contains(sel, "{") {
		sel += "{"
	}
	pts, err := p.Query(sel+`job="mqblast"}[1h]`, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	return pts
}

// sums returns the running totals of f over the intervals.
func sums(ivs []result.Interval, f func(iv *result.Interval) int64) []float64 {
	var out []float64
	var c int64
	for i := range ivs {
		c += f(&ivs[i])
		out = append(out, float64(c))
	}
	return out
}

// TestRemoteWritePrometheus: a run against Mosquitto pushes to a real Prometheus (its
// remote-write receiver on, no scrape of its own); the series read back through its HTTP
// API are the result's intervals' running totals, one point per interval and one at the
// end with the end-of-run figures (lost).
func TestRemoteWritePrometheus(t *testing.T) {
	t.Parallel()
	p := promtest.Start(t, time.Minute)
	r := doOK(t, remoteSpec(t, p.WriteURL(), 4*time.Second))
	res := checkDoc(t, r)
	rw := res.RemoteWrite
	if rw == nil {
		t.Fatalf("no remote_write in the result\n%s", r.stderr)
	}
	n := len(res.Intervals)
	t.Logf("%d intervals; remote_write %+v", n, *rw)
	if rw.Pushes != int64(n+1) || rw.Sent != rw.Pushes || rw.Failed+rw.Dropped != 0 || rw.SamplesSent == 0 {
		t.Errorf("remote_write %+v, want %d pushes all sent", *rw, n+1)
	}
	if !strings.Contains(r.stderr, "pushing metrics to "+p.WriteURL()) {
		t.Errorf("stderr does not say where it pushes:\n%s", r.stderr)
	}
	for _, c := range []struct {
		name  string
		f     func(iv *result.Interval) int64
		final int64
	}{
		{"mqblast_messages_published_total", func(iv *result.Interval) int64 { return iv.Published }, res.Messages.Published},
		{"mqblast_messages_received_total", func(iv *result.Interval) int64 { return iv.Received }, res.Messages.Received},
		{"mqblast_messages_expected_total", func(iv *result.Interval) int64 { return iv.Expected }, res.Messages.Expected},
		{"mqblast_connections_connected_total", func(iv *result.Interval) int64 { return iv.Connected }, res.Connections.Established},
	} {
		pts := pushed(t, p, c.name)
		want := append(sums(res.Intervals, c.f), float64(c.final))
		var got []float64
		for _, pt := range pts {
			got = append(got, pt.V)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s in Prometheus: %v\nthe result's running totals (then the total): %v", c.name, got, want)
		}
	}
	lost := pushed(t, p, "mqblast_messages_lost_total")
	if len(lost) != n+1 || lost[n].V != float64(res.Messages.Lost) {
		t.Errorf("mqblast_messages_lost_total: %v, want %d points ending at the result's %d", lost, n+1, res.Messages.Lost)
	}
	if res.Messages.Published == 0 || res.Messages.Received == 0 {
		t.Errorf("the run moved nothing: %+v", res.Messages)
	}
	// The latency histogram arrives as a scrape would store it: buckets, sum, count.
	cnt := pushed(t, p, "mqblast_latency_seconds_count")
	inf := pushed(t, p, `mqblast_latency_seconds_bucket{le="+Inf",`)
	if len(cnt) != n+1 || cnt[n].V != float64(res.Histograms.Latency.Count()) || len(inf) == 0 {
		t.Errorf("latency histogram: count %v (want the result's %d at the end), %d bucket points", cnt, res.Histograms.Latency.Count(), len(inf))
	}
}

// TestRemoteWriteReceiverDown (timing: the receiver's up and down follow the clock): the receiver is down when the run starts, comes up, and
// goes away again before the end: the run goes on with its intervals, the pushes it could
// not send are counted as failed, and the ones sent while it was up are in it.
func TestRemoteWriteReceiverDown(t *testing.T) {
	tm := tier.Timing(t)
	addr := fmt.Sprintf("127.0.0.1:%d", testbroker.FreePort(t, "127.0.0.1"))
	sp := remoteSpec(t, "http://"+addr+"/api/v1/write", 7*time.Second)
	run := goSpec(context.Background(), t, sp)
	time.Sleep(2500 * time.Millisecond)
	p := promtest.StartAt(t, addr, time.Minute)
	time.Sleep(2500 * time.Millisecond)
	got := pushed(t, p, "mqblast_messages_published_total")
	p.Stop()
	r := run.wait()
	if r.err != nil {
		t.Fatalf("%v\n%s", r.err, r.stderr)
	}
	res := checkDoc(t, r)
	rw := res.RemoteWrite
	t.Logf("%d intervals; remote_write %+v; %d points while up", len(res.Intervals), *rw, len(got))
	if rw.Pushes != int64(len(res.Intervals)+1) || rw.Sent == 0 || rw.Failed == 0 || rw.Sent+rw.Failed+rw.Dropped != rw.Pushes {
		t.Errorf("remote_write %+v: want %d pushes, some sent and some failed", *rw, len(res.Intervals)+1)
	}
	if int64(len(got)) > rw.Sent || len(got) == 0 {
		t.Errorf("%d points in Prometheus while it was up, %d pushes sent", len(got), rw.Sent)
	}
	// What it holds are running totals the result has.
	want := map[float64]bool{}
	for _, v := range sums(res.Intervals, func(iv *result.Interval) int64 { return iv.Published }) {
		want[v] = true
	}
	for _, pt := range got {
		if !want[pt.V] {
			t.Errorf("published %v in Prometheus is no running total of the result's intervals", pt.V)
		}
	}
	if !strings.Contains(r.stderr, "warning: --remote-write:") || !strings.Contains(rw.LastError, "connection refused") {
		t.Errorf("the misses are not said (last error %q):\n%s", rw.LastError, r.stderr)
	}
	checkIntervalsOnTime(tm, res, 7)
}

// checkIntervalsOnTime fails the test unless the run had its intervals at its own pace:
// at least want-2 of them, none more than 1.5 s after the one before.
func checkIntervalsOnTime(t *tier.T, res *result.Result, want int) {
	t.Helper()
	ivs := res.Intervals
	if len(ivs) < want-2 {
		t.Errorf("%d intervals, want about %d", len(ivs), want)
	}
	for i := 1; i < len(ivs); i++ {
		if gap := ivs[i].TS - ivs[i-1].TS; gap > 1.5 {
			t.Errorf("interval %d ended %.2f s after the one before", i, gap)
		}
	}
}

// TestRemoteWriteSlowReceiver (timing: the intervals' pace is the claim): a receiver that takes 3 s to answer (past a push's
// timeout) never delays an interval: the run keeps its pace, and the pushes are failed or
// dropped (the queue is bounded), all counted.
func TestRemoteWriteSlowReceiver(t *testing.T) {
	tm := tier.Timing(t)
	var reqs atomic.Int64
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reqs.Add(1)
		select {
		case <-time.After(3 * time.Second):
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(slow.Close)
	r := doOK(t, remoteSpec(t, slow.URL+"/api/v1/write", 6*time.Second))
	res := checkDoc(t, r)
	rw := res.RemoteWrite
	t.Logf("%d intervals, %d requests; remote_write %+v", len(res.Intervals), reqs.Load(), *rw)
	if rw.Sent != 0 || rw.Failed == 0 || rw.Dropped == 0 || rw.Sent+rw.Failed+rw.Dropped != rw.Pushes ||
		rw.Pushes != int64(len(res.Intervals)+1) || rw.Retries == 0 {
		t.Errorf("remote_write %+v: want %d pushes, none sent, failed and dropped ones", *rw, len(res.Intervals)+1)
	}
	if !strings.Contains(rw.LastError, "deadline exceeded") {
		t.Errorf("last error %q", rw.LastError)
	}
	checkIntervalsOnTime(tm, res, 6)
}

// TestRemoteWriteCredentials: the receiver's credentials come from the environment or a
// file and reach it in the Authorization header; they are in neither the result nor what
// the run says.
func TestRemoteWriteCredentials(t *testing.T) {
	t.Parallel()
	var got atomic.Value
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Store(r.Header.Get("Authorization"))
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(recv.Close)
	sp := remoteSpec(t, recv.URL+"/api/v1/write", 2*time.Second)
	r := doSpec(t, sp, "MQBLAST_REMOTE_WRITE_TOKEN=s3cr3t-token")
	if r.err != nil {
		t.Fatalf("%v\n%s", r.err, r.stderr)
	}
	if a, _ := got.Load().(string); a != "Bearer s3cr3t-token" {
		t.Errorf("Authorization %q, want the bearer token", a)
	}
	doc, _ := json.Marshal(r.res)
	for _, s := range []string{r.stdout, r.stderr, string(doc)} {
		if strings.Contains(s, "s3cr3t") {
			t.Errorf("the token is out: %s", s)
		}
	}
	if r.res.RemoteWrite == nil || r.res.RemoteWrite.Sent == 0 {
		t.Errorf("remote_write %+v", r.res.RemoteWrite)
	}
	// Basic auth from a file.
	auth := filepath.Join(t.TempDir(), "rw.auth")
	if err := os.WriteFile(auth, []byte("username=mqb\npassword=pa55word\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sp = remoteSpec(t, recv.URL+"/api/v1/write", 2*time.Second)
	sp.Outputs.RemoteWriteAuth = auth
	r = doOK(t, sp)
	if a, _ := got.Load().(string); a != "Basic "+base64.StdEncoding.EncodeToString([]byte("mqb:pa55word")) || strings.Contains(r.said(), "pa55word") {
		t.Errorf("Authorization %q from the file", a)
	}
	// A file that is not there is refused before the run.
	sp = remoteSpec(t, recv.URL+"/api/v1/write", 2*time.Second)
	sp.Outputs.RemoteWriteAuth = auth + ".missing"
	if r = doSpec(t, sp); r.err == nil || !strings.Contains(r.err.Error(), "remote_write_auth") || strings.Contains(r.stderr, "connecting") {
		t.Errorf("a missing credentials file: %v\n%s", r.err, r.stderr)
	}
	// A URL with credentials in it is refused before the run, without showing them.
	sp = remoteSpec(t, "http://user:pa55@127.0.0.1:1/api/v1/write", time.Second)
	r = doSpec(t, sp)
	if r.err == nil || !strings.Contains(r.err.Error(), "holds credentials") || strings.Contains(r.said(), "pa55") {
		t.Errorf("a URL with credentials: %v", r.err)
	}
}
