package result

import (
	"encoding/base64"
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// TestHistJSONRoundTrip: the V2 base64 form decodes to the same histogram.
func TestHistJSONRoundTrip(t *testing.T) {
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
	// Encoding or copying a packed histogram does not decode its counts (188 KB).
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	_, _ = h.MarshalJSON()
	_ = h.packedCopy()
	runtime.ReadMemStats(&m1)
	if d := m1.TotalAlloc - m0.TotalAlloc; d > 64<<10 {
		t.Errorf("encoding and copying the packed histogram allocated %d bytes", d)
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
	h := NewHist()
	h.Record(-5)
	h.Record(0)
	h.Record(histHighest * 2)
	s := h.Summary()
	if s.Count != 3 || s.Clamped != 2 || s.Max < histHighest*999/1000 {
		t.Fatalf("summary %+v", s)
	}
}

// TestGroupHistCoarse: a group snapshot's histograms count at 2 significant digits, in a
// seventh of the run's memory, their percentiles within 1 % of the run's own (3 digits);
// packed, sent as JSON and merged into a group snapshot of another process, they keep
// their precision; a run snapshot's stay at 3 digits.
func TestGroupHistCoarse(t *testing.T) {
	run, grp := NewSnapshot(), NewGroupSnapshot()
	for i := int64(1); i <= 100000; i++ {
		v := i*i%997*1000 + i%1000 + 1 // spread over 1 µs .. 1 s
		run.Latency.Record(v)
		grp.Latency.Record(v)
	}
	r, g := run.Latency.HDR(), grp.Latency.HDR()
	if r.SignificantFigures() != 3 || g.SignificantFigures() != 2 {
		t.Fatalf("significant figures: run %d, group %d; want 3 and 2", r.SignificantFigures(), g.SignificantFigures())
	}
	if rb, gb := r.ByteSize(), g.ByteSize(); gb*7 > rb {
		t.Errorf("counts: group %d B, run %d B: want a seventh or less", gb, rb)
	}
	rs, gs := run.Latency.Summary(), grp.Latency.Summary()
	for _, p := range [][2]int64{{rs.P50, gs.P50}, {rs.P90, gs.P90}, {rs.P99, gs.P99}, {rs.P999, gs.P999}} {
		if d := float64(p[1]-p[0]) / float64(p[0]); d > 0.01 || d < -0.01 {
			t.Errorf("group percentile %d against the run's %d: %.2f %% off", p[1], p[0], 100*d)
		}
	}
	b, err := json.Marshal(grp)
	if err != nil {
		t.Fatal(err)
	}
	var back Snapshot
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	other := NewGroupSnapshot()
	other.Add(&back)
	other.Add(grp)
	if h := other.Latency.HDR(); h.SignificantFigures() != 2 || h.TotalCount() != 200000 || other.Latency.Summary().P99 != gs.P99 {
		t.Errorf("merged: %d digits, %d values, p99 %d (want 2, 200000, %d)", h.SignificantFigures(), h.TotalCount(),
			other.Latency.Summary().P99, gs.P99)
	}
	grp.Reset()
	grp.Latency.Record(5)
	if grp.Latency.HDR().SignificantFigures() != 2 {
		t.Errorf("reset: the group histogram lost its precision")
	}
}

// TestHistFewValues: a histogram keeps its first values without counts, reads, merges,
// packs and encodes exactly as hdrhistogram-go's own counts of the same values do, and takes
// counts at the value past fewMax, or where a read needs them.
func TestHistFewValues(t *testing.T) {
	for _, digits := range []int8{0, groupDigits} {
		n := int(digits)
		if n == 0 {
			n = histDigits
		}
		h, ref := &Hist{digits: digits}, hdrhistogram.New(histLowest, histHighest, n)
		vals := []int64{0, 1, 999, 1001, 123456, histHighest + 5, 77, 77}
		for _, v := range vals {
			h.Record(v)
			_ = ref.RecordValue(min(max(v, histLowest), histHighest))
		}
		if h.h != nil || len(h.few) != len(vals) || h.Count() != int64(len(vals)) || h.clamped != 1 {
			t.Fatalf("digits %d: counts %v, %d kept, count %d, clamped %d", digits, h.h != nil, len(h.few), h.Count(), h.clamped)
		}
		// A copy merged from the few values, before any read takes counts.
		m := &Hist{digits: digits}
		m.Merge(h)
		if m.h != nil || m.Count() != h.Count() || m.clamped != 1 {
			t.Fatalf("digits %d: merged few: counts %v, count %d, clamped %d", digits, m.h != nil, m.Count(), m.clamped)
		}
		want := Percentiles{Count: ref.TotalCount(), Mean: ref.Mean(), P50: ref.ValueAtQuantile(50), P90: ref.ValueAtQuantile(90),
			P99: ref.ValueAtQuantile(99), P999: ref.ValueAtQuantile(99.9), Max: ref.Max(), Clamped: 1}
		if got := h.Summary(); got != want {
			t.Fatalf("digits %d: summary %+v, want %+v", digits, got, want)
		}
		if h.h == nil || len(h.few) != 0 {
			t.Fatalf("digits %d: reading did not take counts", digits)
		}
		a, _ := json.Marshal(m) // m still holds its few values: encoded from them
		var s string
		if err := json.Unmarshal(a, &s); err != nil || s != string(encodeV2(ref)) {
			t.Fatalf("digits %d: JSON of the few values differs from the counts' (%v)", digits, err)
		}
		if cp := m.packedCopy(); m.h != nil || len(m.few) != len(vals) || string(cp.packed) != s || cp.n != int64(len(vals)) {
			t.Fatalf("digits %d: encoding the few values changed them (counts %v, %d kept) or their copy", digits, m.h != nil, len(m.few))
		}
		p := &Hist{digits: digits}
		p.Merge(m)
		p.Pack()
		if p.h != nil || p.few != nil || p.Count() != int64(len(vals)) || p.Summary() != want {
			t.Fatalf("digits %d: packed few: %+v", digits, p.Summary())
		}
		// Counts merged into few values, and few values into counts.
		c := &Hist{digits: digits}
		c.Record(5)
		c.Merge(h)
		d := &Hist{digits: digits}
		d.Merge(h)
		d.Record(5)
		if c.Count() != 9 || c.Summary() != d.Summary() || c.clamped != 1 {
			t.Fatalf("digits %d: few+counts %+v, counts+few %+v", digits, c.Summary(), d.Summary())
		}
	}
	// The value past fewMax takes counts; Reset keeps neither values nor counts' contents.
	h := NewHist()
	for i := range fewMax {
		h.Record(int64(i + 1))
	}
	if h.h != nil || len(h.few) != fewMax {
		t.Fatalf("%d values: counts %v", fewMax, h.h != nil)
	}
	h.Record(fewMax + 1)
	if h.h == nil || len(h.few) != 0 || h.Count() != fewMax+1 || h.Max() != fewMax+1 {
		t.Fatalf("past fewMax: counts %v, %d kept, count %d", h.h != nil, len(h.few), h.Count())
	}
	// Reset after more than fewMax values keeps the counts, emptied; the next Reset after
	// fewer gives them back: the histogram holds few values again, and its next counts (the
	// pool's) start empty.
	h.Reset()
	if h.h == nil || h.Count() != 0 || h.Summary() != (Percentiles{}) {
		t.Fatalf("reset after %d values: counts kept %v, %+v", fewMax+1, h.h != nil, h.Summary())
	}
	h.Record(7)
	h.Reset()
	if h.h != nil || h.Count() != 0 || h.Summary() != (Percentiles{}) {
		t.Fatalf("reset after 1 value: counts kept %v, %+v", h.h != nil, h.Summary())
	}
	for i := range fewMax + 2 {
		h.Record(int64(1000 + i))
	}
	if h.h == nil || h.Count() != fewMax+2 || h.Min() != h.h.ValueAtQuantile(0) || h.h.ValueAtQuantile(0) < 999 || h.Max() < fewMax+1001 {
		t.Fatalf("refilled after a reset: count %d, min %d, max %d", h.Count(), h.Min(), h.Max())
	}
	// Counts of another precision, decoded from a foreign form, are not given to a new
	// histogram of this run's.
	foreign := hdrhistogram.New(histLowest, histHighest, 1)
	_ = foreign.RecordValue(42)
	b, _ := json.Marshal(string(encodeV2(foreign)))
	var f Hist
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	f.Record(43) // decoded: its counts are f's own now
	f.Reset()
	n := NewHist()
	for i := range fewMax + 1 {
		n.Record(int64(i + 1))
	}
	if d := n.h.SignificantFigures(); d != histDigits {
		t.Fatalf("a new histogram took counts of %d digits", d)
	}
}
