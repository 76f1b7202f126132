package result

import (
	"encoding/base64"
	"encoding/json"
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
