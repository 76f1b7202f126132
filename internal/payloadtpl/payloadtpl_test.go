package payloadtpl

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestRenderJSON(t *testing.T) {
	t.Parallel()
	tp, err := Compile(`{"id":"{{client_id}}","i":{{client_index}},"seq":{{ seq }},"ms":{{unix_ms}},"us":{{unix_us}},` +
		`"at":"{{rfc3339}}","n":{{rand_int -5 5}},"f":{{rand_float 1.5 2.25}},"c":"{{choice on|off|idle}}","t":"{{rand_text 13}}","m":"{{mark}}"}`)
	if err != nil {
		t.Fatal(err)
	}
	if !tp.PerClient() || !tp.HasMark() {
		t.Fatalf("PerClient %v HasMark %v", tp.PerClient(), tp.HasMark())
	}
	now := time.Date(2026, 12, 7, 19, 45, 3, 123456789, time.UTC)
	mark := []byte(strings.Repeat("Z", MarkLen))
	seen := map[string]bool{}
	for seq := uint32(0); seq < 200; seq++ {
		v := Vars{ClientID: []byte("dev-7"), ClientIndex: 7, Seq: seq, Now: now.UnixNano(), Mark: mark}
		out := tp.Append(nil, &v)
		if len(out) > tp.MaxLen(5) {
			t.Fatalf("%d bytes > MaxLen %d: %s", len(out), tp.MaxLen(5), out)
		}
		var m struct {
			ID       string
			I        int
			Seq      uint32
			MS, US   int64
			At, C, T string
			N        int
			F        float64
			M        string
		}
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatalf("%s: %v", out, err)
		}
		if m.ID != "dev-7" || m.I != 7 || m.Seq != seq || m.MS != now.UnixMilli() || m.US != now.UnixMicro() ||
			m.At != "2026-12-07T19:45:03.123Z" || m.M != string(mark) || len(m.T) != 13 {
			t.Fatalf("%s", out)
		}
		if m.N < -5 || m.N > 5 || m.F < 1.5 || m.F > 2.25 || (m.C != "on" && m.C != "off" && m.C != "idle") {
			t.Fatalf("%s", out)
		}
		seen["n"+strconv.Itoa(m.N)] = true
		seen[m.C] = true
	}
	for _, k := range []string{"n-5", "n5", "on", "off", "idle"} {
		if !seen[k] {
			t.Errorf("200 renderings never gave %s", k)
		}
	}
}

// rfc3339 renders {{rfc3339}} alone.
var rfc3339, _ = Compile("{{rfc3339}}")

func TestRFC3339(t *testing.T) {
	t.Parallel()
	for _, at := range []time.Time{time.Unix(0, 0), time.Date(2000, 2, 29, 23, 59, 59, 999e6, time.UTC),
		time.Date(1969, 12, 31, 23, 59, 59, 1e6, time.UTC), time.Date(2200, 12, 31, 0, 0, 0, 0, time.UTC)} {
		v := Vars{Now: at.UnixNano()}
		got := string(rfc3339.Append(nil, &v))
		if want := at.UTC().Format("2006-01-02T15:04:05.000Z"); got != want {
			t.Errorf("%v: %s, want %s", at, got, want)
		}
	}
}

func TestCompileErrors(t *testing.T) {
	t.Parallel()
	for src, want := range map[string]string{
		`{"a":"{{clientid}}"}`: "{{clientid}} at byte 6: unknown placeholder",
		`x{{seq`:               "{{ at byte 1 is not closed",
		`{{rand_int 5 1}}`:     "rand_int takes two integers",
		`{{rand_float a 1}}`:   "rand_float takes two numbers",
		`{{rand_text 0}}`:      "rand_text takes a length",
		`{{choice}}`:           "choice takes a list",
		`{{seq 3}}`:            "seq takes no arguments",
	} {
		_, err := Compile(src)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", src, err, want)
		}
	}
	if tp, err := Compile(`plain {"a":{"b":1}}`); err != nil || tp.PerClient() || tp.HasMark() || tp.MaxLen(9) != 19 {
		t.Errorf("plain: %v", err)
	}
}

func TestAppendFixed(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		v    float64
		prec int
	}{{0, 2}, {0.004, 2}, {0.005, 2}, {-0.25, 2}, {18, 1}, {31.5, 3}, {-7, 0}, {123456.789, 2}, {1e15, 2}, {-0.001, 2}, {9.999, 2}} {
		got := render(func(b []byte, w int) int { return putFixed(b, w, c.v, c.prec) })
		want := strconv.FormatFloat(c.v, 'f', c.prec, 64)
		if got != want && (want != "-0.00" || got != "0.00") {
			t.Errorf("%v prec %d: %s, want %s", c.v, c.prec, got, want)
		}
	}
}

// TestRFC3339Cached: one Vars rendering instants in turn, across seconds and a day, as
// time.Format does.
func TestRFC3339Cached(t *testing.T) {
	t.Parallel()
	var v Vars
	at := time.Date(2026, 12, 31, 23, 59, 58, 0, time.UTC)
	for range 50 {
		at = at.Add(123456789 * time.Nanosecond)
		v.Now = at.UnixNano()
		if got, want := string(rfc3339.Append(nil, &v)), at.Format("2006-01-02T15:04:05.000Z"); got != want {
			t.Fatalf("%s, want %s", got, want)
		}
	}
}

func TestAppendUint(t *testing.T) {
	t.Parallel()
	for _, n := range []int64{0, 7, 9, 10, 99, 100, 101, 999, 1000, 4294967295, 1765000000123, -1, -100, math.MaxInt64, math.MinInt64 + 1} {
		if got, want := render(func(b []byte, w int) int { return putInt(b, w, n) }), strconv.FormatInt(n, 10); got != want {
			t.Errorf("%d: %s", n, got)
		}
	}
}

// render returns what put writes at the start of a buffer with slack.
func render(put func(buf []byte, w int) int) string {
	buf := make([]byte, 64)
	return string(buf[:put(buf, 0)])
}

// TestTimesCached: one Vars rendering a run of instants renders each one's own time,
// whether the millisecond, second or day changed since the last message or not, and when
// the clock goes back.
func TestTimesCached(t *testing.T) {
	t.Parallel()
	tp, err := Compile(`{{unix_ms}} {{unix_us}} {{rfc3339}}`)
	if err != nil {
		t.Fatal(err)
	}
	var v Vars
	at := time.Date(2026, 12, 31, 23, 59, 59, 998_000_000, time.UTC)
	steps := []time.Duration{0, 300 * time.Nanosecond, 700 * time.Microsecond, time.Microsecond, 999 * time.Microsecond,
		time.Millisecond, 2 * time.Millisecond, 0, -3 * time.Millisecond, time.Second, 86400 * time.Second, 1}
	for _, d := range steps {
		at = at.Add(d)
		v.Now = at.UnixNano()
		want := strconv.FormatInt(at.UnixMilli(), 10) + " " + strconv.FormatInt(at.UnixMicro(), 10) + " " + at.Format("2006-01-02T15:04:05.000Z")
		if got := string(tp.Append(nil, &v)); got != want {
			t.Fatalf("%v: %s, want %s", at, got, want)
		}
	}
}

// TestNumbers: rand_int and rand_float write their numbers as strconv does, at every width
// and sign, and a literal longer than a segment's block whole.
func TestNumbers(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("0123456789", 4)
	for _, src := range []string{"{{rand_int -5 5}}", "{{rand_int 0 9}}", "{{rand_int 95 105}}", "{{rand_int 9990 10010}}",
		"{{rand_int 99999990 100000010}}", "{{rand_int -4503599627370496 -4503599627370490}}", "{{rand_int 4503599627370490 4503599627370496}}",
		"{{rand_float 0 1}}", "{{rand_float -0.05 0.05}}", "{{rand_float 18.0 31.5}}", "{{rand_float 999999.9 1000000.1}}",
		"{{rand_float -1.5 1.5}}", "{{rand_float 0 0.0000001}}", "{{rand_float 1.123456789 1.123456799}}", "{{rand_float 1e14 1e15}}"} {
		tp, err := Compile(long + src + long)
		if err != nil {
			t.Fatal(err)
		}
		var v Vars
		for range 300 {
			out := string(tp.Append(nil, &v))
			if len(out) > tp.MaxLen(0) || !strings.HasPrefix(out, long) || !strings.HasSuffix(out, long) {
				t.Fatalf("%s: %s (MaxLen %d)", src, out, tp.MaxLen(0))
			}
			num := out[len(long) : len(out)-len(long)]
			if strings.HasPrefix(src, "{{rand_int") {
				if n, err := strconv.ParseInt(num, 10, 64); err != nil || strconv.FormatInt(n, 10) != num {
					t.Fatalf("%s: %s", src, num)
				}
				continue
			}
			prec := 0
			for _, s := range tp.segs {
				prec = max(prec, s.prec)
			}
			f := strings.Fields(strings.Trim(src, "{}"))
			a, _ := strconv.ParseFloat(f[1], 64)
			b, _ := strconv.ParseFloat(f[2], 64)
			x, err := strconv.ParseFloat(num, 64)
			whole, frac, _ := strings.Cut(strings.TrimPrefix(num, "-"), ".")
			if err != nil || x < a || x > b || len(frac) != prec || whole == "" || whole[0] == '0' && whole != "0" {
				t.Fatalf("%s: %s", src, num)
			}
		}
	}
}

// TestPutScaled: a count of 10^-prec written as strconv writes the number.
func TestPutScaled(t *testing.T) {
	t.Parallel()
	for _, n := range []int64{0, 1, 9, 10, 99, 100, 1234, 99999999, 100000000, 123456789012, -1, -100, -99999999, math.MaxInt64} {
		for prec := range 19 {
			got := render(func(b []byte, w int) int { return putScaled(b, w, n, prec) })
			s := strconv.FormatInt(max(n, -n), 10)
			if len(s) <= prec {
				s = strings.Repeat("0", prec+1-len(s)) + s
			}
			want := s
			if prec > 0 {
				want = s[:len(s)-prec] + "." + s[len(s)-prec:]
			}
			if n < 0 {
				want = "-" + want
			}
			if got != want {
				t.Errorf("%d prec %d: %s, want %s", n, prec, got, want)
			}
		}
	}
}

// TestRoomExact: into a slice of exactly Room, every placeholder renders whole, a client
// index of 20 characters and a client id shorter than a block included (run with -race
// for checkptr's view of the writes past bounds checks).
func TestRoomExact(t *testing.T) {
	t.Parallel()
	tp, err := Compile(`{"i":{{client_index}},"id":"{{client_id}}","s":{{seq}},"us":{{unix_us}},"at":"{{rfc3339}}","t":"{{rand_text 13}}",` +
		`"c":"{{choice a|bb|a-choice-longer-than-16}}","f":{{rand_float -1e12 1e12}},"m":"{{mark}}"}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		id    string
		index int
	}{{"d", math.MinInt64}, {"dev-0000000000007", math.MaxInt64}, {"", 0}, {"sensor-17", -99999999}} {
		v := Vars{ClientID: []byte(c.id), ClientIndex: c.index, Seq: math.MaxUint32, Now: time.Now().UnixNano(), Mark: []byte(strings.Repeat("m", MarkLen))}
		dst := make([]byte, 3, 3+tp.Room(len(c.id)))
		out := tp.Append(dst, &v)
		if &out[0] != &dst[0] {
			t.Fatalf("%+v: Append grew a slice of Room", c)
		}
		var m map[string]any
		if err := json.Unmarshal(out[3:], &m); err != nil {
			t.Fatalf("%s: %v", out[3:], err)
		}
		if i := `"i":` + strconv.Itoa(c.index) + `,"id":"` + c.id + `"`; !strings.Contains(string(out), i) {
			t.Fatalf("%s: no %s", out, i)
		}
	}
	four, err := Compile(`{{client_index}}{{client_index}}{{client_index}}{{client_index}}.`)
	if err != nil {
		t.Fatal(err)
	}
	v := Vars{ClientIndex: math.MinInt64}
	if got, want := string(four.Append(make([]byte, 0, four.Room(0)), &v)), strings.Repeat(strconv.Itoa(math.MinInt64), 4)+"."; got != want {
		t.Fatalf("%s, want %s", got, want)
	}
}

// FuzzAppendRoom: whatever the template and the values, Append writes inside Room and
// nowhere past it (its loop writes blocks without bounds checks: a write past the room
// would corrupt memory, which the guard bytes after it catch), and grows nothing.
func FuzzAppendRoom(f *testing.F) {
	f.Add(`{"device":"{{client_id}}","n":{{client_index}},"seq":{{seq}},"ts":{{unix_ms}},"at":"{{rfc3339}}","temp":{{rand_float 18.0 31.5}},"rpm":{{rand_int 900 3100}},"state":"{{choice idle|run|fault}}","fw":"{{rand_text 8}}","m":"{{mark}}"}`,
		"mqblast-pub-17", int64(17), uint32(5), int64(1765000000123456789), int64(1500))
	f.Add(`{{client_index}}{{client_index}}{{unix_us}}{{rand_float -1e12 1e12}}`, "", int64(math.MinInt64), uint32(math.MaxUint32), int64(-1), int64(-7))
	f.Add(`{{client_index}}{{client_index}}{{client_index}}{{client_index}}.`, "", int64(math.MinInt64), uint32(1), int64(1), int64(1))
	f.Add(`x{{choice a|bb|a-choice-longer-than-sixteen-bytes}}{{rand_text 33}}{{rand_int -5 5}}`, "d", int64(math.MaxInt64), uint32(0), int64(0), int64(1e9))
	f.Fuzz(func(t *testing.T, src, id string, index int64, seq uint32, now, step int64) {
		tp, err := Compile(src)
		if err != nil {
			return
		}
		v := Vars{ClientID: []byte(id), ClientIndex: int(index), Seq: seq, Now: now, Mark: []byte(strings.Repeat("m", MarkLen))}
		const at, guard = 5, 64
		room := tp.Room(len(id))
		back := make([]byte, at+room+guard)
		for k := 0; k < 2; k++ { // the second with another time: the cached time texts' other path
			for i := range back {
				back[i] = 0xA5
			}
			out := tp.Append(back[:at:at+room], &v)
			if &out[0] != &back[0] || len(out) > at+room {
				t.Fatalf("%q: Append grew or overran its room (%d bytes, room %d)", src, len(out)-at, room)
			}
			for i, b := range back[at+room:] {
				if b != 0xA5 {
					t.Fatalf("%q (id %q, index %d): wrote byte %d past the room of %d", src, id, index, i, room)
				}
			}
			v.Now += step
			v.Seq++
		}
	})
}
