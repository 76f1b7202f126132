package payloadtpl

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

// refAppend renders t with v plainly, a byte or a strconv call at a time, and time.Format
// for {{rfc3339}}, drawing v's random numbers in Append's order: what Append's blocks,
// tables and caches must write byte for byte.
func refAppend(t *Template, v *Vars) []byte {
	var b []byte
	for i := range t.segs {
		s := &t.segs[i]
		b = append(b, s.head[:s.litN]...)
		switch s.kind {
		case kClientID:
			b = append(b, v.ClientID...)
		case kClientIndex:
			b = strconv.AppendInt(b, int64(v.ClientIndex), 10)
		case kSeq:
			b = strconv.AppendUint(b, uint64(v.Seq), 10)
		case kUnixMS:
			b = strconv.AppendInt(b, v.Now/1e6, 10)
		case kUnixUS:
			b = strconv.AppendInt(b, v.Now/1e3, 10)
		case kRFC3339:
			b = time.Unix(0, v.Now).UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z")
		case kRandInt:
			b = strconv.AppendInt(b, s.a+int64(v.below(uint64(s.n))), 10)
		case kRandFloat:
			if s.grid {
				b = refScaled(b, s.a+int64(v.below(uint64(s.n))), s.prec)
				break
			}
			f := s.fa + s.fw*float64(v.next()>>11)/(1<<53)
			if s.prec >= len(pow10) || math.Abs(f)*pow10[s.prec] >= 1<<62 {
				b = strconv.AppendFloat(b, f, 'f', s.prec, 64)
				break
			}
			n := int64(math.Round(f * pow10[s.prec]))
			if n < 0 {
				b = append(b, '-')
				n = -n
			}
			b = refScaled(b, n, s.prec)
		case kChoice:
			b = append(b, s.choices[v.below(uint64(len(s.choices)))]...)
		case kRandText:
			for k := int64(0); k < s.n; k += 8 {
				r := v.next()
				for j := int64(0); j < 8 && k+j < s.n; j++ {
					b = append(b, alnum64[r>>(6*j)&63])
				}
			}
		case kMark:
			b = append(b, v.Mark...)
		}
	}
	return append(b, t.tail[:t.tailN]...)
}

// refScaled appends n × 10^-prec with prec decimals: n's digits by strconv, zeros before
// them to one digit before the point, and the point.
func refScaled(b []byte, n int64, prec int) []byte {
	if n < 0 {
		b = append(b, '-')
	}
	s := strconv.FormatUint(uint64(max(n, -n)), 10) // math.MinInt64 stays itself: its digits
	if n == math.MinInt64 {
		s = strings.TrimPrefix(strconv.FormatInt(n, 10), "-")
	}
	if len(s) <= prec {
		s = strings.Repeat("0", prec+1-len(s)) + s
	}
	if prec == 0 {
		return append(b, s...)
	}
	b = append(b, s[:len(s)-prec]...)
	b = append(b, '.')
	return append(b, s[len(s)-prec:]...)
}

// refTemplates are templates with every placeholder, at widths and signs that take each of
// Append's paths.
var refTemplates = []string{
	benchTemplates[0].src, benchTemplates[1].src,
	`{"id":"{{client_id}}","i":{{client_index}},"seq":{{ seq }},"ms":{{unix_ms}},"us":{{unix_us}},` +
		`"at":"{{rfc3339}}","n":{{rand_int -5 5}},"f":{{rand_float 1.5 2.25}},"c":"{{choice on|off|idle}}","t":"{{rand_text 13}}","m":"{{mark}}"}`,
	`{{client_index}}{{client_index}}{{unix_us}}{{rand_float -1e12 1e12}}{{rand_float 0 0.0000001}}{{rand_float 1.123456789 1.123456799}}`,
	`x{{choice a|bb|a-choice-longer-than-sixteen-bytes}}{{rand_text 33}}{{rand_int -5 5}}{{rand_int 99999990 100000010}}`,
	`{{rand_int -4503599627370496 4503599627370496}} {{rand_float -0.05 0.05}} {{rand_float 999999.9 1000000.1}} {{rand_float 1e14 1e15}}`,
	`{{rand_int 0 9}}{{rand_int 95 105}}{{rand_int 9990 10010}}{{rand_float 0 1}}{{rand_float -1.5 1.5}}{{rand_text 1}}{{rand_text 8}}{{rand_text 9}}`,
}

// checkReference renders src with v by Append (twice, the second time the caches set) and
// by refAppend, from the same random state, and fails on any byte or draw that differs.
func checkReference(t *testing.T, tp *Template, v *Vars) {
	t.Helper()
	if v.rng == 0 {
		v.rng = 0x9e3779b97f4a7c15
	}
	want := v.clone()
	wantOut := refAppend(tp, want)
	for k := range 2 {
		got := v.clone()
		if k == 1 {
			got = v // v's caches, of the last rendering
		}
		out := tp.Append(make([]byte, 0, tp.Room(len(v.ClientID))), got)
		if !bytes.Equal(out, wantOut) || got.rng != want.rng {
			t.Fatalf("%s with %+v:\n%s\nwant\n%s", tp, *v, out, wantOut)
		}
	}
	*v = *want
}

// clone returns a copy of v.
func (v *Vars) clone() *Vars { c := *v; return &c }

// TestAppendReference: Append writes what refAppend writes, for the templates of
// refTemplates with client indexes, sequence numbers and times at every width, and over
// runs of messages 500 ns to a day apart that keep or change the cached millisecond,
// second and day.
func TestAppendReference(t *testing.T) {
	t.Parallel()
	mark := []byte(strings.Repeat("M", MarkLen))
	indexes := []int{0, 7, 9, 10, 17, 99, 100, 999, 1000, 9999, 10000, 99999999, 100000000, -1, -17, -99999999, -100000000, math.MaxInt64, math.MinInt64}
	seqs := []uint32{0, 1, 9, 10, 9999, 10000, 99999999, 100000000, math.MaxUint32}
	nows := []int64{0, 1, 999, 1000, 999999, 1000000, 1765000000123456789,
		time.Date(2000, 2, 29, 23, 59, 59, 999e6, time.UTC).UnixNano(), -1, -999999, -1000000, -1000001, time.Date(1969, 12, 31, 23, 59, 59, 1e6, time.UTC).UnixNano(), math.MinInt64 + 1,
		time.Date(1677, 9, 22, 0, 0, 0, 0, time.UTC).UnixNano(), math.MaxInt64}
	for _, src := range refTemplates {
		tp, err := Compile(src)
		if err != nil {
			t.Fatal(err)
		}
		for i, index := range indexes {
			for j, seq := range seqs {
				for _, now := range nows {
					v := Vars{ClientID: []byte("mqblast-pub-17")[:i%15], ClientIndex: index, Seq: seq, Now: now, Mark: mark, rng: uint64(i*131 + j)}
					checkReference(t, tp, &v)
				}
			}
		}
		v := Vars{ClientID: []byte("mqblast-pub-17"), ClientIndex: 17, Mark: mark, Now: time.Date(2026, 12, 31, 23, 59, 58, 0, time.UTC).UnixNano()}
		steps := []int64{500, 500, 500, 1300, 500, 999_999, 500, 1_000_001, 77_777_777, 500, 1_300_000_000, 86_400e9}
		for i := range 20000 {
			v.Seq++
			v.Now += steps[i%len(steps)]
			checkReference(t, tp, &v)
		}
	}
}

// FuzzAppendReference: whatever the template and values, Append writes what refAppend
// writes.
func FuzzAppendReference(f *testing.F) {
	for _, src := range refTemplates {
		f.Add(src, "mqblast-pub-17", int64(17), uint32(5), int64(1765000000123456789), int64(1500), uint64(1))
	}
	f.Add(`{{client_index}}{{seq}}{{rand_int -99999999 99999999}}`, "", int64(math.MinInt64), uint32(math.MaxUint32), int64(-1), int64(-7), uint64(0))
	f.Fuzz(func(t *testing.T, src, id string, index int64, seq uint32, now, step int64, seed uint64) {
		tp, err := Compile(src)
		if err != nil {
			return
		}
		v := Vars{ClientID: []byte(id), ClientIndex: int(index), Seq: seq, Now: now, Mark: []byte(strings.Repeat("m", MarkLen)), rng: seed}
		for range 3 {
			checkReference(t, tp, &v)
			v.Now += step
			v.Seq++
		}
	})
}
