package report

import (
	"encoding/json"
	"encoding/xml"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/mqblast/mqblast/result"
)

// TestBoxExact checks the box statistics against the ranks of the sorted values: exact
// below 2048 µs (HdrHistogram keeps every integer there at 3 digits) and within a bucket
// (0.1%) above, also after the histogram's JSON round trip (a result document's form).
func TestBoxExact(t *testing.T) {
	check := func(name string, vals []int64, tol float64) {
		t.Run(name, func(t *testing.T) {
			h := result.NewHist()
			for _, v := range vals {
				h.Record(v)
			}
			b, err := json.Marshal(h)
			if err != nil {
				t.Fatal(err)
			}
			var back result.Hist
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			sorted := slices.Clone(vals)
			slices.Sort(sorted)
			rank := func(p float64) int64 { // the smallest value with at least p% at or below it
				k := int(math.Ceil(p/100*float64(len(sorted)))) - 1
				return sorted[max(k, 0)]
			}
			want := BoxStats{Count: int64(len(vals)), Min: sorted[0], P1: rank(1), P25: rank(25), P50: rank(50),
				P75: rank(75), P99: rank(99), Max: sorted[len(sorted)-1]}
			for _, hh := range []*result.Hist{h, &back} {
				got := Box(hh)
				if got.Count != want.Count {
					t.Fatalf("count %d, want %d", got.Count, want.Count)
				}
				g := []int64{got.Min, got.P1, got.P25, got.P50, got.P75, got.P99, got.Max}
				w := []int64{want.Min, want.P1, want.P25, want.P50, want.P75, want.P99, want.Max}
				for i := range g {
					if d := math.Abs(float64(g[i]-w[i])) / float64(w[i]); d > tol {
						t.Errorf("box %+v, want %+v (field %d off by %.4f)", got, want, i, d)
						break
					}
				}
			}
		})
	}
	var small []int64
	for v := int64(1); v <= 1000; v++ {
		small = append(small, v)
	}
	check("1..1000", small, 0)
	rng := rand.New(rand.NewPCG(1, 2))
	var wide []int64
	for range 20000 {
		wide = append(wide, int64(math.Exp(rng.Float64()*14))+1) // 1 µs .. 1.2 s
	}
	check("log-uniform", wide, 0.001)
	if got := Box(nil); got != (BoxStats{}) {
		t.Errorf("Box(nil) = %+v, want zero", got)
	}
}

// TestBoxplotSVG checks that the SVG is well-formed XML with one box per item that has
// values, the median inside its box, and "no data" for an empty one.
func TestBoxplotSVG(t *testing.T) {
	items := []BoxItem{
		{Label: "mosquitto <2.0.11> & co", Box: BoxStats{Count: 100, Min: 40, P1: 50, P25: 100, P50: 200, P75: 400, P99: 5000, Max: 9000}},
		{Label: "embedded", Box: BoxStats{Count: 10, Min: 2, P1: 3, P25: 10, P50: 20, P75: 30, P99: 90, Max: 100}},
		{Label: "empty"},
	}
	for _, linear := range []bool{false, true} {
		svg := BoxplotSVG(items, BoxplotOptions{Title: "latency", Linear: linear})
		type elem struct {
			XMLName xml.Name
			Class   string  `xml:"class,attr"`
			X       float64 `xml:"x,attr"`
			Width   float64 `xml:"width,attr"`
			X1      float64 `xml:"x1,attr"`
			Rects   []elem  `xml:"rect"`
			Lines   []elem  `xml:"line"`
		}
		var doc struct {
			Boxes string `xml:"data-boxes,attr"`
			Items []elem `xml:"g"`
			Texts []struct {
				Body string `xml:",chardata"`
			} `xml:"text"`
		}
		if err := xml.Unmarshal([]byte(svg), &doc); err != nil {
			t.Fatalf("linear=%v: not XML: %v\n%s", linear, err, svg)
		}
		if doc.Boxes != "2" || len(doc.Items) != 2 {
			t.Fatalf("linear=%v: data-boxes %q, %d box groups; want 2", linear, doc.Boxes, len(doc.Items))
		}
		for i, g := range doc.Items {
			var box, med *elem
			for j := range g.Rects {
				if g.Rects[j].Class == "box" {
					box = &g.Rects[j]
				}
			}
			for j := range g.Lines {
				if g.Lines[j].Class == "median" {
					med = &g.Lines[j]
				}
			}
			if box == nil || med == nil || med.X1 < box.X || med.X1 > box.X+box.Width {
				t.Errorf("linear=%v item %d: box %+v, median %+v: want the median inside the box", linear, i, box, med)
			}
		}
		if !strings.Contains(svg, "no data") || !strings.Contains(svg, "p25–p75") {
			t.Errorf("linear=%v: want \"no data\" for the empty item and the legend", linear)
		}
	}
}

func TestFormatUS(t *testing.T) {
	for in, want := range map[int64]string{850: "850µs", 1234: "1.23ms", 45600: "45.6ms", 3_400_000: "3.40s", 12_000_000: "12s"} {
		if got := FormatUS(in); got != want {
			t.Errorf("FormatUS(%d) = %q, want %q", in, got, want)
		}
	}
}
