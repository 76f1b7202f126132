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

func TestRFC3339(t *testing.T) {
	t.Parallel()
	for _, at := range []time.Time{time.Unix(0, 0), time.Date(2000, 2, 29, 23, 59, 59, 999e6, time.UTC),
		time.Date(1969, 12, 31, 23, 59, 59, 1e6, time.UTC), time.Date(2200, 12, 31, 0, 0, 0, 0, time.UTC)} {
		v := Vars{Now: at.UnixNano()}
		got := string(v.appendRFC3339(nil))
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
		got := string(appendFixed(nil, c.v, c.prec))
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
		if got, want := string(v.appendRFC3339(nil)), at.Format("2006-01-02T15:04:05.000Z"); got != want {
			t.Fatalf("%s, want %s", got, want)
		}
	}
}

func TestAppendUint(t *testing.T) {
	t.Parallel()
	for _, n := range []int64{0, 7, 9, 10, 99, 100, 101, 999, 1000, 4294967295, 1765000000123, -1, -100, math.MaxInt64, math.MinInt64 + 1} {
		if got, want := string(appendInt(nil, n)), strconv.FormatInt(n, 10); got != want {
			t.Errorf("%d: %s", n, got)
		}
	}
}
