// Package payloadtpl compiles payload templates (text or JSON with placeholders in double
// braces: {{seq}}, {{rand_int 1 9}}, {{mark}} ...) once, for scenario to check and size, and
// renders them per message for the reactor, appending to a caller-owned slice without
// allocating.
//
// It imports nothing of mqblast's.
package payloadtpl

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// MarkLen is the width of the text measurement mark ({{mark}}): the reactor's text form of
// its measurement header and write time, letters and digits only, so that it may stand
// inside a JSON string.
const MarkLen = 52

// maxRandText bounds {{rand_text N}}.
const maxRandText = 1 << 20

// rfc3339Len is the width of {{rfc3339}}: UTC with milliseconds, 2006-01-02T15:04:05.000Z.
const rfc3339Len = 24

// Placeholders lists the placeholders a template may hold, as the errors name them.
const Placeholders = "client_id, client_index, seq, unix_ms, unix_us, rfc3339, rand_int A B, rand_float A B, choice a|b|c, rand_text N, mark"

type kind uint8

const (
	kLit kind = iota
	kClientID
	kClientIndex
	kSeq
	kUnixMS
	kUnixUS
	kRFC3339
	kRandInt
	kRandFloat
	kChoice
	kRandText
	kMark
)

type seg struct {
	kind    kind
	lit     []byte   // kLit
	a, n    int64    // kRandInt: a..a+n-1; kRandText: n
	fa, fw  float64  // kRandFloat: fa + fw×[0,1), when grid is false
	prec    int      // kRandFloat: decimals
	grid    bool     // kRandFloat: drawn as a + [0, n) hundredths (or 10^-prec) instead
	scale   uint64   // kRandFloat: 10^prec
	choices [][]byte // kChoice
}

// Template is a compiled payload template. It is immutable and safe for concurrent use.
type Template struct {
	src       string
	segs      []seg
	fixed     int // the largest rendering without the client id
	perClient bool
	mark      bool
}

// Vars are the per-message values a template renders.
type Vars struct {
	ClientID    []byte
	ClientIndex int
	Seq         uint32
	Now         int64  // unix ns (CLOCK_REALTIME)
	Mark        []byte // MarkLen bytes: the message's text measurement mark

	// The second sec (unix) as {{rfc3339}} writes it, up to its decimal point, kept from
	// the last rendering: the civil date is worked out once a second, not per message.
	sec    int64
	secTxt [20]byte
	secSet bool
	// The millisecond ms as {{unix_ms}} writes it (msLen bytes of msTxt), kept from the
	// last rendering: many messages fall in one millisecond.
	ms    int64
	msTxt [20]byte
	msLen uint8
	// rng is the state of the placeholders' random numbers (wyrand), seeded from
	// math/rand/v2 on first use: per caller, so that rendering takes no lock and no
	// shared state.
	rng uint64
}

// next returns the next 64-bit random number of v's generator (wyrand).
func (v *Vars) next() uint64 {
	if v.rng == 0 {
		v.rng = rand.Uint64() | 1
	}
	v.rng += 0xa0761d6478bd642f
	hi, lo := bits.Mul64(v.rng, v.rng^0xe7037ed1a0b428db)
	return hi ^ lo
}

// below returns a random number from 0 to n-1 (n > 0), by Lemire's multiply (a bias of at
// most n/2^64).
func (v *Vars) below(n uint64) uint64 {
	hi, _ := bits.Mul64(v.next(), n)
	return hi
}

// Compile reads a template. Its error says what is wrong and where (a byte offset into src);
// the caller names the file and field.
func Compile(src string) (*Template, error) {
	t := &Template{src: src}
	rest, off := src, 0
	for rest != "" {
		i := strings.Index(rest, "{{")
		if i < 0 {
			t.lit(rest)
			break
		}
		t.lit(rest[:i])
		j := strings.Index(rest[i:], "}}")
		if j < 0 {
			return nil, fmt.Errorf("{{ at byte %d is not closed by }}", off+i)
		}
		body := strings.TrimSpace(rest[i+2 : i+j])
		s, err := placeholder(body)
		if err != nil {
			return nil, fmt.Errorf("{{%s}} at byte %d: %w", body, off+i, err)
		}
		t.segs = append(t.segs, s)
		t.fixed += s.maxLen()
		switch s.kind {
		case kClientID, kClientIndex:
			t.perClient = true
		case kMark:
			t.mark = true
		}
		rest, off = rest[i+j+2:], off+i+j+2
	}
	return t, nil
}

func (t *Template) lit(s string) {
	if s == "" {
		return
	}
	if n := len(t.segs); n > 0 && t.segs[n-1].kind == kLit {
		t.segs[n-1].lit = append(t.segs[n-1].lit, s...)
	} else {
		t.segs = append(t.segs, seg{kind: kLit, lit: []byte(s)})
	}
	t.fixed += len(s)
}

var errUnknown = errors.New("unknown placeholder (want one of " + Placeholders + ")")

func placeholder(body string) (seg, error) {
	name, args, _ := strings.Cut(body, " ")
	args = strings.TrimSpace(args)
	noArgs := func(k kind) (seg, error) {
		if args != "" {
			return seg{}, fmt.Errorf("%s takes no arguments", name)
		}
		return seg{kind: k}, nil
	}
	switch name {
	case "client_id":
		return noArgs(kClientID)
	case "client_index":
		return noArgs(kClientIndex)
	case "seq":
		return noArgs(kSeq)
	case "unix_ms":
		return noArgs(kUnixMS)
	case "unix_us":
		return noArgs(kUnixUS)
	case "rfc3339":
		return noArgs(kRFC3339)
	case "mark":
		return noArgs(kMark)
	case "rand_int":
		f := strings.Fields(args)
		if len(f) != 2 {
			return seg{}, errors.New("rand_int takes two integers A B (A ≤ B)")
		}
		a, err1 := strconv.ParseInt(f[0], 10, 64)
		b, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil || a > b || a < -1<<52 || b > 1<<52 {
			return seg{}, errors.New("rand_int takes two integers A B (A ≤ B, within ±2^52)")
		}
		return seg{kind: kRandInt, a: a, n: b - a + 1}, nil
	case "rand_float":
		f := strings.Fields(args)
		if len(f) != 2 {
			return seg{}, errors.New("rand_float takes two numbers A B (A ≤ B)")
		}
		a, err1 := strconv.ParseFloat(f[0], 64)
		b, err2 := strconv.ParseFloat(f[1], 64)
		if err1 != nil || err2 != nil || a > b || math.IsInf(a, 0) || math.IsInf(b, 0) || math.Abs(a) > 1e15 || math.Abs(b) > 1e15 {
			return seg{}, errors.New("rand_float takes two numbers A B (A ≤ B, within ±1e15)")
		}
		s := seg{kind: kRandFloat, fa: a, fw: b - a, prec: max(decimals(f[0]), decimals(f[1]), 2)}
		if s.prec < len(pow10) && max(math.Abs(a), math.Abs(b))*pow10[s.prec] < 1<<52 {
			// An integer count of 10^-prec from A to B, both included: one draw and one
			// integer to write, no float formatting.
			s.grid, s.scale = true, uint64(pow10[s.prec])
			s.a = int64(math.Round(a * pow10[s.prec]))
			s.n = int64(math.Round(b*pow10[s.prec])) - s.a + 1
		}
		return s, nil
	case "choice":
		if args == "" {
			return seg{}, errors.New("choice takes a list a|b|c")
		}
		var s seg
		s.kind = kChoice
		for _, c := range strings.Split(args, "|") {
			s.choices = append(s.choices, []byte(c))
		}
		return s, nil
	case "rand_text":
		n, err := strconv.Atoi(args)
		if err != nil || n < 1 || n > maxRandText {
			return seg{}, fmt.Errorf("rand_text takes a length N (1 to %d)", maxRandText)
		}
		return seg{kind: kRandText, n: int64(n)}, nil
	}
	return seg{}, errUnknown
}

// decimals counts the digits after a number's decimal point.
func decimals(s string) int {
	if i := strings.IndexByte(s, '.'); i >= 0 {
		return len(strings.TrimRightFunc(s[i+1:], func(r rune) bool { return r < '0' || r > '9' }))
	}
	return 0
}

// maxLen is the widest rendering of s (a client id counts 0: MaxLen adds it).
func (s *seg) maxLen() int {
	switch s.kind {
	case kLit:
		return len(s.lit)
	case kClientIndex:
		return 10
	case kSeq:
		return 10
	case kUnixMS, kUnixUS:
		return 19
	case kRFC3339:
		return rfc3339Len
	case kRandInt:
		return max(len(strconv.FormatInt(s.a, 10)), len(strconv.FormatInt(s.a+s.n-1, 10)))
	case kRandFloat:
		return max(len(strconv.FormatFloat(s.fa, 'f', s.prec, 64)), len(strconv.FormatFloat(s.fa+s.fw, 'f', s.prec, 64))) + 1
	case kChoice:
		n := 0
		for _, c := range s.choices {
			n = max(n, len(c))
		}
		return n
	case kRandText:
		return int(s.n)
	case kMark:
		return MarkLen
	}
	return 0
}

// String returns the template's source.
func (t *Template) String() string { return t.src }

// MaxLen returns the longest rendering for client ids of at most idLen bytes.
func (t *Template) MaxLen(idLen int) int {
	n := t.fixed
	for i := range t.segs {
		if t.segs[i].kind == kClientID {
			n += idLen
		}
	}
	return n
}

// PerClient reports whether the template holds the client's id or index.
func (t *Template) PerClient() bool { return t.perClient }

// HasMark reports whether the template holds the measurement mark ({{mark}}).
func (t *Template) HasMark() bool { return t.mark }

// Append appends the rendering of t with v to dst and returns the extended slice. It
// allocates nothing when dst has room for MaxLen bytes.
func (t *Template) Append(dst []byte, v *Vars) []byte {
	for i := range t.segs {
		s := &t.segs[i]
		switch s.kind {
		case kLit:
			dst = append(dst, s.lit...)
		case kClientID:
			dst = append(dst, v.ClientID...)
		case kClientIndex:
			dst = appendInt(dst, int64(v.ClientIndex))
		case kSeq:
			dst = appendUint(dst, uint64(v.Seq))
		case kUnixMS:
			if ms := v.Now / 1e6; ms != v.ms || v.msLen == 0 {
				v.ms, v.msLen = ms, uint8(len(appendInt(v.msTxt[:0], ms)))
			}
			dst = append(dst, v.msTxt[:v.msLen]...)
		case kUnixUS:
			dst = appendInt(dst, v.Now/1e3)
		case kRFC3339:
			dst = v.appendRFC3339(dst)
		case kRandInt:
			dst = appendInt(dst, s.a+int64(v.below(uint64(s.n))))
		case kRandFloat:
			if s.grid {
				dst = appendScaled(dst, s.a+int64(v.below(uint64(s.n))), s.prec, s.scale)
			} else {
				dst = appendFixed(dst, s.fa+s.fw*float64(v.next()>>11)/(1<<53), s.prec)
			}
		case kChoice:
			dst = append(dst, s.choices[v.below(uint64(len(s.choices)))]...)
		case kRandText:
			dst = v.appendRandText(dst, int(s.n))
		case kMark:
			dst = append(dst, v.Mark...)
		}
	}
	return dst
}

// alnum64 are the letters and digits, and two of them again to make 64: one per 6 bits.
const alnum64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789xy"

// appendRandText appends n random letters and digits, ten 6-bit draws per 64-bit number,
// written in place (x and y come a little more often than the others).
func (v *Vars) appendRandText(dst []byte, n int) []byte {
	at := len(dst)
	dst = slices.Grow(dst, n)[:at+n]
	out := dst[at:]
	for len(out) >= 10 {
		r := v.next()
		for k := range 10 {
			out[k] = alnum64[(r>>(6*k))&63]
		}
		out = out[10:]
	}
	r := v.next()
	for k := range out {
		out[k] = alnum64[(r>>(6*k))&63]
	}
	return dst
}

// appendRFC3339 appends v.Now as 2006-01-02T15:04:05.000Z (UTC, fixed width).
func (v *Vars) appendRFC3339(dst []byte) []byte {
	t := v.Now
	secs, ns := t/1e9, t%1e9
	if ns < 0 {
		secs, ns = secs-1, ns+1e9
	}
	ms := ns / 1e6
	days, sod := secs/86400, secs%86400
	if sod < 0 {
		sod += 86400
		days--
	}
	if !v.secSet || secs != v.sec {
		y, m, d := civil(days)
		b := append4(v.secTxt[:0], y)
		b = append(b, '-')
		b = append2(b, m)
		b = append(b, '-')
		b = append2(b, d)
		b = append(b, 'T')
		b = append2(b, int(sod/3600))
		b = append(b, ':')
		b = append2(b, int(sod/60%60))
		b = append(b, ':')
		append2(b, int(sod%60))
		v.secTxt[19] = '.'
		v.sec, v.secSet = secs, true
	}
	dst = append(dst, v.secTxt[:]...)
	return append(dst, byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z')
}

// civil converts days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's
// civil_from_days).
func civil(z int64) (y, m, d int) {
	z += 719468
	era := z / 146097
	if z < 0 && z%146097 != 0 {
		era--
	}
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	yy := yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = int(doy - (153*mp+2)/5 + 1)
	if mp < 10 {
		m = int(mp + 3)
	} else {
		m = int(mp - 9)
	}
	if m <= 2 {
		yy++
	}
	return int(yy), m, d
}

func append2(dst []byte, v int) []byte { return append(dst, byte('0'+v/10), byte('0'+v%10)) }

func append4(dst []byte, v int) []byte {
	v = min(max(v, 0), 9999)
	return append(dst, byte('0'+v/1000), byte('0'+v/100%10), byte('0'+v/10%10), byte('0'+v%10))
}

// pow10 are the scales appendFixed takes.
var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18}

// appendFixed appends v with prec decimals, as strconv.AppendFloat(dst, v, 'f', prec, 64)
// would for |v| × 10^prec below 2^63, by way of one integer (a fifth of its cost); past
// that, by AppendFloat.
func appendFixed(dst []byte, v float64, prec int) []byte {
	if prec >= len(pow10) || math.Abs(v)*pow10[prec] >= 1<<62 {
		return strconv.AppendFloat(dst, v, 'f', prec, 64)
	}
	n := int64(math.Round(v * pow10[prec]))
	if n < 0 {
		dst = append(dst, '-')
		n = -n
	}
	return appendScaled(dst, n, prec, uint64(pow10[prec]))
}

// appendScaled appends n × 10^-prec (scale is 10^prec) with prec decimals.
func appendScaled(dst []byte, n int64, prec int, scale uint64) []byte {
	if n < 0 {
		dst = append(dst, '-')
		n = -n
	}
	if prec == 0 {
		return appendUint(dst, uint64(n))
	}
	dst = appendUint(dst, uint64(n)/scale)
	dst = append(dst, '.')
	frac := uint64(n) % scale
	at := len(dst)
	dst = slices.Grow(dst, prec)[:at+prec]
	for i := at + prec - 1; i >= at; i-- {
		dst[i] = byte('0' + frac%10)
		frac /= 10
	}
	return dst
}

// digitPairs are the two-digit numbers 00 to 99, for appendUint.
const digitPairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839" +
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879" +
	"8081828384858687888990919293949596979899"

// appendUint appends n in decimal, two digits a step (strconv.AppendUint's way, without
// its general base handling).
func appendUint(dst []byte, n uint64) []byte {
	var buf [20]byte
	i := len(buf)
	for n >= 100 {
		q := n / 100
		r := (n - q*100) * 2
		i -= 2
		buf[i], buf[i+1] = digitPairs[r], digitPairs[r+1]
		n = q
	}
	if n >= 10 {
		i -= 2
		buf[i], buf[i+1] = digitPairs[n*2], digitPairs[n*2+1]
	} else {
		i--
		buf[i] = byte('0' + n)
	}
	return append(dst, buf[i:]...)
}

// appendInt appends n in decimal.
func appendInt(dst []byte, n int64) []byte {
	if n < 0 {
		return appendUint(append(dst, '-'), uint64(-n))
	}
	return appendUint(dst, uint64(n))
}
