package bench

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/mqblast/mqblast/reactor"
)

// TestHistJSONRoundTrip: the V2 base64 form decodes to the same histogram.
func TestHistJSONRoundTrip(t *testing.T) {
	t.Parallel()
	h := NewHist()
	for i := int64(1); i <= 10000; i++ {
		h.Record(i * 37)
	}
	b, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	var back Hist
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if got, want := back.Summary(), h.Summary(); got != want {
		t.Fatalf("round trip: %+v, want %+v", got, want)
	}
	if err := json.Unmarshal([]byte(`"not base64!"`), &back); err == nil {
		t.Error("bad base64 decoded")
	}
	// The document holds hdrhistogram-go's own V2 text, as HdrHistogram's tools read it.
	var s string
	if err := json.Unmarshal(b, &s); err != nil || !strings.HasPrefix(s, "HISTF") {
		t.Fatalf("encoded %.20q (%v), want the V2 compressed form HISTF...", s, err)
	}
	if d, err := hdrhistogram.Decode([]byte(s)); err != nil || d.TotalCount() != h.Count() {
		t.Fatalf("hdrhistogram.Decode: %v, count %v", err, d)
	}
	// Documents written before hold the base64 of that text: they still read.
	old, _ := json.Marshal(base64.StdEncoding.EncodeToString([]byte(s)))
	var back2 Hist
	if err := json.Unmarshal(old, &back2); err != nil || back2.Summary() != h.Summary() {
		t.Fatalf("the older form: %v, %+v", err, back2.Summary())
	}
}

// TestHistPack: a packed histogram keeps its compressed form only, reads the same, and
// unpacks when changed.
func TestHistPack(t *testing.T) {
	t.Parallel()
	h, ref := NewHist(), NewHist()
	for i := int64(1); i <= 5000; i++ {
		h.Record(i * 11)
		ref.Record(i * 11)
	}
	h.Pack()
	if h.h != nil || len(h.packed) == 0 || len(h.packed) > 16<<10 {
		t.Fatalf("packed: counts kept %v, %d bytes", h.h != nil, len(h.packed))
	}
	if h.Count() != 5000 || h.Summary() != ref.Summary() || h.ValueAtPercentile(25) != ref.ValueAtPercentile(25) ||
		h.Min() != ref.Min() || h.Max() != ref.Max() {
		t.Fatalf("packed reads %+v, want %+v", h.Summary(), ref.Summary())
	}
	if h.h != nil {
		t.Error("reading unpacked it")
	}
	a, _ := json.Marshal(h)
	b, _ := json.Marshal(ref)
	if string(a) != string(b) {
		t.Error("packed JSON differs")
	}
	m := NewHist()
	m.Merge(h)
	h.Record(7)
	ref.Record(7)
	if m.Count() != 5000 || h.Count() != 5001 || h.Summary() != ref.Summary() {
		t.Errorf("merge of packed %d, record into packed %+v want %+v", m.Count(), h.Summary(), ref.Summary())
	}
}

// TestHistClamps: values outside 1 µs .. 1 h are recorded at the bound and counted.
func TestHistClamps(t *testing.T) {
	t.Parallel()
	h := NewHist()
	h.Record(-5)
	h.Record(0)
	h.Record(histHighest * 2)
	s := h.Summary()
	if s.Count != 3 || s.Clamped != 2 || s.Max < histHighest*999/1000 {
		t.Fatalf("summary %+v", s)
	}
}

// TestMergeIsExact: merging the results of shards gives the percentiles of one histogram of
// all the values, not an average of the shards' percentiles.
func TestMergeIsExact(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	all := NewHist()
	var shards []*Result
	for s := 0; s < 3; s++ {
		snap := NewSnapshot()
		n := 1000 * (s + 1)
		for i := 0; i < n; i++ {
			v := int64(r.ExpFloat64() * float64(100*(s+1)*(s+1)))
			snap.ConnectLatency.Record(v)
			all.Record(v)
		}
		snap.Connected = int64(n)
		snap.Failed["refused"] = int64(s)
		res := &Result{Connections: Connections{Target: n + s}, Host: HostInfo{Procs: 1},
			Client: ClientInfo{CPUS: 1, RSSPerConnectionBytes: float64(100 * (s + 1))}}
		res.fill(snap)
		shards = append(shards, res)
	}
	m := Merge(shards)
	c := m.Connections
	if c.Established != 6000 || c.Target != 6003 || c.FailedBy["refused"] != 3 || m.Host.Procs != 3 {
		t.Fatalf("merged counts: established %d target %d failed %v procs %d", c.Established, c.Target, c.FailedBy, m.Host.Procs)
	}
	if got, want := c.ConnectLatencyUS, all.Summary(); got != want {
		t.Fatalf("merged percentiles %+v, want those of all values %+v", got, want)
	}
	// RSS per connection is weighted by connections: (100*1000+200*2000+300*3000)/6000.
	if got := m.Client.RSSPerConnectionBytes; got < 233.3 || got > 233.4 {
		t.Errorf("rss per connection %v, want 233.33", got)
	}
	if m.Client.CPUS != 3 {
		t.Errorf("cpu %v, want the sum 3", m.Client.CPUS)
	}
	if len(shards[0].Errors) != 1 || shards[0].Errors[0].Count != 0 {
		t.Errorf("Merge changed its input's errors: %+v", shards[0].Errors)
	}
}

// TestRecorderTake: a loop's counts move into the snapshot and reset.
func TestRecorderTake(t *testing.T) {
	t.Parallel()
	rec := NewRecorder(2)
	rec.Connected(1, 7, 1500*time.Microsecond)
	rec.Refused(1, 8, 5, 0x87)
	rec.Refused(0, 9, 4, 5)
	rec.Failed(0, 10, reactor.CauseTimeout, "no CONNACK")
	rec.Dropped(1, 11, reactor.CauseKeepalive, "no PINGRESP")
	rec.Ping(0, 7, 300*time.Microsecond)
	s := NewSnapshot()
	rec.Take(0, s)
	rec.Take(1, s)
	if s.Connected != 1 || s.Refused["not_authorized"] != 2 || s.Failed["timeout"] != 1 ||
		s.Dropped["keepalive_timeout"] != 1 || s.Pings != 1 || s.ConnectLatency.Count() != 1 {
		t.Fatalf("snapshot %+v", s)
	}
	if !strings.Contains(s.Examples["refused:not_authorized"], "0x") {
		t.Errorf("examples %v", s.Examples)
	}
	again := NewSnapshot()
	rec.Take(1, again)
	if again.Connected != 0 || again.ConnectLatency.Count() != 0 {
		t.Errorf("Take did not reset: %+v", again)
	}
}

// TestGather merges two workers' streams interval by interval and their final results.
func TestGather(t *testing.T) {
	t.Parallel()
	worker := func(connected []int64) io.Reader {
		var buf bytes.Buffer
		ww := NewWorkerWriter(&buf)
		total := NewSnapshot()
		var open int64
		for i, c := range connected {
			s := NewSnapshot()
			s.Connected = c
			s.CPUNS, s.RSSBytes = 250_000_000, 1<<20 // a quarter of a core, 1 MiB
			for j := int64(0); j < c; j++ {
				s.ConnectLatency.Record(1000 + j)
			}
			open += c
			total.Add(s)
			if err := ww.Interval(NewInterval(float64(i+1), open, s, time.Second), s); err != nil {
				t.Fatal(err)
			}
		}
		res := &Result{Schema: Schema, Connections: Connections{Target: 10}, Host: HostInfo{Procs: 1}}
		res.fill(total)
		if err := ww.Final(res, nil, 0); err != nil {
			t.Fatal(err)
		}
		return &buf
	}
	var progress bytes.Buffer
	res, err := Gather([]io.Reader{worker([]int64{6, 4}), worker([]int64{10, 0, 0})}, 20, time.Second, &progress, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Intervals) != 3 {
		t.Fatalf("intervals %+v", res.Intervals)
	}
	if iv := res.Intervals[0]; iv.Connected != 16 || iv.Established != 16 || iv.ConnectLatencyUS.Count != 16 {
		t.Errorf("first interval %+v", iv)
	}
	if iv := res.Intervals[1]; iv.Connected != 4 || iv.Established != 20 {
		t.Errorf("second interval %+v", iv)
	}
	// Both workers had intervals 1 and 2, only the second had 3: their CPU and RSS add.
	for i, want := range []struct {
		cpu float64
		rss int64
	}{{50, 2 << 20}, {50, 2 << 20}, {25, 1 << 20}} {
		if iv := res.Intervals[i]; iv.ClientCPUPercent != want.cpu || iv.ClientRSSBytes != want.rss {
			t.Errorf("interval %d: client cpu %v%% rss %d, want %v%% %d", i, iv.ClientCPUPercent, iv.ClientRSSBytes, want.cpu, want.rss)
		}
	}
	if h := res.Intervals[0].Histograms; h == nil || h.ConnectLatency.Count() != 16 {
		t.Errorf("first interval's connect histogram: %+v", h)
	}
	if res.Connections.Established != 20 || res.Connections.Target != 20 || res.Histograms.ConnectLatency.Count() != 20 {
		t.Errorf("merged %+v", res.Connections)
	}
	if got := strings.Count(progress.String(), "\n"); got != 3 {
		t.Errorf("progress lines %d:\n%s", got, progress.String())
	}
}

// TestGatherWorkerError: a worker that reports an error passes it, with its exit code, up.
func TestGatherWorkerError(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	_ = NewWorkerWriter(&buf).Final(nil, io.ErrUnexpectedEOF, 3)
	_, err := Gather([]io.Reader{&buf}, 1, time.Second, nil, nil, nil, nil)
	var we *WorkerError
	if err == nil || !strings.Contains(err.Error(), "unexpected EOF") {
		t.Fatalf("err %v", err)
	}
	_ = we
}
