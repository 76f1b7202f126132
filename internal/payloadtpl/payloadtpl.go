// Package payloadtpl compiles payload templates (text or JSON with placeholders in double
// braces: {{seq}}, {{rand_int 1 9}}, {{mark}} ...) once, for scenario to check and size, and
// renders them per message for the reactor, appending to a caller-owned slice without
// allocating.
//
// It imports nothing of mqblast's.
package payloadtpl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"unsafe"
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
	kNone kind = iota // literal text alone, no placeholder
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

// seg is the literal text before a placeholder (up to headLen bytes: a longer text takes
// segments of its own, with no placeholder), and the placeholder. Append copies the text in
// one block of headLen, and choices in blocks of 16 from arrays padded to them: no call.
type seg struct {
	head    [headLen]byte // the text before the placeholder
	litN    int           // its length
	kind    kind          // kNone: no placeholder
	a, n    int64         // kRandInt: a..a+n-1; kRandText: n
	fa, fw  float64       // kRandFloat: fa + fw×[0,1), when grid is false
	prec    int           // kRandFloat: decimals
	dmin    int           // prec+1: the fewest digits a number takes
	lim     uint64        // the numbers below it (of prec below 8) Append writes in one word
	grid    bool          // kRandFloat: drawn as a + [0, n) units of 10^-prec instead
	choices [][]byte      // kChoice, padded
}

// headLen is how much literal text a segment holds.
const headLen = 16

// Template is a compiled payload template. It is immutable and safe for concurrent use.
type Template struct {
	src  string
	segs []seg
	// tail is the literal text after the last placeholder (tailN bytes), written after
	// the loop: a segment of its own took a pass of it.
	tail  [headLen]byte
	tailN int
	fixed int // the largest rendering without the client id (a MarkLen mark)
	nID   int // how many {{client_id}}
	nMark int // how many {{mark}}
	// pad is how far past the rendering's widest end Append may reach: slack, and 10
	// bytes a {{client_index}} (its maxLen counts 10 digits; an int may have 20).
	pad       int
	perClient bool
	mark      bool
}

// slack is how far past a rendering's end Append may write: it copies literal text and
// choices 16 bytes a step, the cached time texts 24 and numbers 8, the surplus overwritten
// by what follows or left past the end (BenchmarkAppend: a call per copy was a third of
// the rendering).
const slack = 32

// Vars are the per-message values a template renders.
type Vars struct {
	ClientID    []byte
	ClientIndex int
	Seq         uint32
	Now         int64  // unix ns (CLOCK_REALTIME)
	Mark        []byte // MarkLen bytes: the message's text measurement mark

	// The millisecond rfcMS (unix, floored) as {{rfc3339}} writes it, kept from the last
	// rendering, and its second's: the civil date is worked out once a second and the text
	// once a millisecond, not per message.
	rfcMS  int64
	rfcSec int64
	rfcTxt [rfc3339Len]byte
	rfcSet bool
	// rfcFrom is the millisecond's first ns and rfcSpan its width (0 before the first):
	// Now is in it when Now-rfcFrom is below rfcSpan, a subtraction instead of a division.
	rfcFrom int64
	rfcSpan uint64
	// The millisecond ms as {{unix_ms}} writes it (msLen bytes of msTxt), kept from the
	// last rendering: many messages fall in one millisecond. {{unix_us}} writes it and
	// three digits more.
	ms    int64
	msTxt [24]byte
	msLen uint8
	// msFrom and msSpan are the ns {{unix_ms}}'s millisecond holds, as rfcFrom's (a
	// span of 0 before 1970, where the millisecond is truncated, not floored).
	msFrom int64
	msSpan uint64
	// rng is the state of the placeholders' random numbers (wyrand), seeded from
	// math/rand/v2 on first use: per caller, so that rendering takes no lock and no
	// shared state.
	rng uint64
}

// next returns the next 64-bit random number of v's generator (wyrand). Append has seeded it.
func (v *Vars) next() uint64 {
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
	t := &Template{src: src, pad: slack}
	rest, off := src, 0
	for rest != "" {
		i := strings.Index(rest, "{{")
		if i < 0 {
			t.add(rest, seg{kind: kNone})
			break
		}
		j := strings.Index(rest[i:], "}}")
		if j < 0 {
			return nil, fmt.Errorf("{{ at byte %d is not closed by }}", off+i)
		}
		body := strings.TrimSpace(rest[i+2 : i+j])
		s, err := placeholder(body)
		if err != nil {
			return nil, fmt.Errorf("{{%s}} at byte %d: %w", body, off+i, err)
		}
		t.add(rest[:i], s)
		rest, off = rest[i+j+2:], off+i+j+2
	}
	if n := len(t.segs); n > 0 && t.segs[n-1].kind == kNone {
		t.tail, t.tailN = t.segs[n-1].head, t.segs[n-1].litN
		t.segs = t.segs[:n-1]
	}
	return t, nil
}

// add appends placeholder s and the literal text lit before it: the text's last headLen
// bytes or less in s, the rest in segments before it.
func (t *Template) add(lit string, s seg) {
	t.fixed += len(lit) + s.maxLen()
	for len(lit) > headLen {
		c := seg{kind: kNone}
		c.litN = copy(c.head[:], lit)
		t.segs = append(t.segs, c)
		lit = lit[headLen:]
	}
	s.litN = copy(s.head[:], lit)
	s.dmin = s.prec + 1
	if s.prec < 8 {
		s.lim = 1e8
	}
	t.segs = append(t.segs, s)
	switch s.kind {
	case kClientID:
		t.nID++
		t.perClient = true
	case kClientIndex:
		t.pad += 10
		t.perClient = true
	case kMark:
		t.nMark++
		t.mark = true
	}
}

// padded returns a copy of b in an array padded with zeros to a multiple of 16 bytes.
func padded(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return append(make([]byte, 0, (len(b)+15)&^15), b...)
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
			s.grid = true
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
			s.choices = append(s.choices, padded([]byte(c)))
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
	return t.fixed + t.nID*idLen
}

// Room returns how many bytes past its length dst needs for Append to allocate nothing
// with a client id of idLen bytes: MaxLen and a margin Append writes over and drops.
func (t *Template) Room(idLen int) int { return t.MaxLen(idLen) + t.pad }

// PerClient reports whether the template holds the client's id or index.
func (t *Template) PerClient() bool { return t.perClient }

// HasMark reports whether the template holds the measurement mark ({{mark}}).
func (t *Template) HasMark() bool { return t.mark }

// Append appends the rendering of t with v to dst and returns the extended slice. It
// allocates nothing when dst has Room past its length; it may write up to that far.
//
// Its loop writes literal text, choices, cached time texts, the mark, the client id, random
// text and numbers below 10^8 in whole blocks at base+w, without bounds checks (an eighth
// of the rendering's instructions, BenchmarkAppend): room, checked first, holds each
// placeholder's widest rendering (and ten bytes more for a client index past ten digits)
// and slack past the last, and no block reaches more than slack past the end of what it
// writes. The rest goes through buf, checked.
func (t *Template) Append(dst []byte, v *Vars) []byte {
	at := len(dst)
	if room := t.fixed + t.nID*len(v.ClientID) + t.nMark*(len(v.Mark)-MarkLen) + t.pad; cap(dst)-at < room {
		dst = slices.Grow(dst, room)
	}
	if v.rng == 0 {
		v.rng = rand.Uint64() | 1
	}
	return dst[:at+t.render(dst[at:cap(dst)], v)]
}

// render writes t's rendering with v at the start of buf, which has the room Append
// checked, and returns its length. Apart from Append, it keeps fewer values across its
// calls: the loop's own were reloaded from the stack a segment at a time.
func (t *Template) render(buf []byte, v *Vars) int {
	segs := t.segs
	base := unsafe.Pointer(unsafe.SliceData(buf))
	w := 0
	for i := range segs {
		s := &segs[i]
		*(*[headLen]byte)(unsafe.Add(base, w)) = s.head
		w += s.litN
		var n int64 // a number to write, with s.prec decimals
		switch s.kind {
		case kNone:
			continue
		case kClientID: // eight bytes a step, the last eight again: no call
			id := v.ClientID
			if len(id) < 8 {
				w += copy(buf[w:], id)
				continue
			}
			for k := 0; k < len(id)-8; k += 8 {
				*(*[8]byte)(unsafe.Add(base, w+k)) = [8]byte(id[k : k+8])
			}
			*(*[8]byte)(unsafe.Add(base, w+len(id)-8)) = [8]byte(id[len(id)-8:])
			w += len(id)
			continue
		case kClientIndex:
			n = int64(v.ClientIndex)
		case kSeq:
			n = int64(v.Seq)
		case kUnixMS: // putUnixMS's, the text set when the millisecond changed
			if uint64(v.Now-v.msFrom) >= v.msSpan {
				v.setUnixMS()
			}
			*(*[24]byte)(unsafe.Add(base, w)) = v.msTxt
			w += int(v.msLen)
			continue
		case kUnixUS:
			w = v.putUnixUS(buf, w)
			continue
		case kRFC3339: // 2006-01-02T15:04:05.000Z (UTC), its text set when the millisecond changed
			if uint64(v.Now-v.rfcFrom) >= v.rfcSpan {
				v.setRFC3339()
			}
			*(*[rfc3339Len]byte)(unsafe.Add(base, w)) = v.rfcTxt
			w += rfc3339Len
			continue
		case kRandInt:
			n = s.a + int64(v.below(uint64(s.n)))
		case kRandFloat:
			if !s.grid {
				w = putFixed(buf, w, s.fa+s.fw*float64(v.next()>>11)/(1<<53), s.prec)
				continue
			}
			n = s.a + int64(v.below(uint64(s.n)))
		case kChoice:
			c := s.choices[v.below(uint64(len(s.choices)))]
			for k := 0; k < len(c); k += 16 {
				*(*[16]byte)(unsafe.Add(base, w+k)) = *(*[16]byte)(c[k : k+16])
			}
			w += len(c)
			continue
		case kRandText: // eight 6-bit draws per 64-bit number, two letters a table lookup
			for k := 0; k < int(s.n); k += 8 {
				r := v.next()
				x := uint64(alnumPairs[r&4095]) | uint64(alnumPairs[r>>12&4095])<<16 |
					uint64(alnumPairs[r>>24&4095])<<32 | uint64(alnumPairs[r>>36&4095])<<48
				binary.LittleEndian.PutUint64((*[8]byte)(unsafe.Add(base, w+k))[:], x)
			}
			w += int(s.n)
			continue
		case kMark:
			if len(v.Mark) == MarkLen { // 16 bytes a step, the last 16 again: a copy of more is a call
				m, at := unsafe.Pointer(unsafe.SliceData(v.Mark)), unsafe.Add(base, w)
				*(*[16]byte)(at) = *(*[16]byte)(m)
				*(*[16]byte)(unsafe.Add(at, 16)) = *(*[16]byte)(unsafe.Add(m, 16))
				*(*[16]byte)(unsafe.Add(at, 32)) = *(*[16]byte)(unsafe.Add(m, 32))
				*(*[16]byte)(unsafe.Add(at, MarkLen-16)) = *(*[16]byte)(unsafe.Add(m, MarkLen-16))
				w += MarkLen
			} else {
				w += copy(buf[w:], v.Mark)
			}
			continue
		}
		// A number below 10^8 (none is wider than its placeholder's room) in one word,
		// the point put in by a second; the others by putScaled.
		u := uint64(n)
		if n < 0 {
			u = uint64(-n)
		}
		if u >= s.lim {
			w = putScaled(buf, w, n, s.prec)
			continue
		}
		if n < 0 {
			*(*byte)(unsafe.Add(base, w)) = '-'
			w++
		}
		var x uint64 // eight digits' values, the first in the low byte
		if u < 1e4 {
			x = digits4(uint32(u)) << 32
		} else {
			x = digits8(uint32(u))
		}
		d := max(8-bits.TrailingZeros64(x|1<<56)>>3, s.dmin) // the zeros before skipped
		x = (x + zeros) >> (8 * (8 - d) & 63)                // d is 1 to 8: & 63 spares the compiler's check
		binary.LittleEndian.PutUint64((*[8]byte)(unsafe.Add(base, w))[:], x)
		if s.prec > 0 {
			k := d - s.prec // digits before the point
			binary.LittleEndian.PutUint64((*[8]byte)(unsafe.Add(base, w+k))[:], x>>(8*k&63)<<8|'.')
			d++
		}
		w += d
	}
	*(*[headLen]byte)(unsafe.Add(base, w)) = t.tail
	return w + t.tailN
}

// alnum64 are the letters and digits, and two of them again to make 64: one per 6 bits.
const alnum64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789xy"

// alnumPairs are two letters of alnum64 for each 12 bits, the first (the low 6 bits') in
// the low byte: {{rand_text N}} writes eight per 64-bit random number (x and y come a
// little more often than the others).
var alnumPairs = func() (p [1 << 12]uint16) {
	for i := range p {
		p[i] = uint16(alnum64[i&63]) | uint16(alnum64[i>>6])<<8
	}
	return p
}()

// putUnixMS writes v.Now in whole milliseconds at buf[w:] and returns the end.
func (v *Vars) putUnixMS(buf []byte, w int) int {
	if uint64(v.Now-v.msFrom) >= v.msSpan {
		v.setUnixMS()
	}
	*(*[24]byte)(buf[w : w+24]) = v.msTxt
	return w + int(v.msLen)
}

// setUnixMS makes v.msTxt the text of v.Now's millisecond.
func (v *Vars) setUnixMS() {
	v.ms = v.Now / 1e6
	v.msLen = uint8(putInt(v.msTxt[:], 0, v.ms))
	v.msFrom, v.msSpan = v.ms*1e6, 1e6
	if v.Now < 0 {
		v.msSpan = 0
	}
}

// putUnixUS writes v.Now in whole microseconds at buf[w:] and returns the end: from 1970
// on, the millisecond's text and three digits.
func (v *Vars) putUnixUS(buf []byte, w int) int {
	us := v.Now / 1e3
	if us < 1e3 {
		return putInt(buf, w, us)
	}
	w = v.putUnixMS(buf, w)
	r := us % 1e3
	buf[w] = byte('0' + r/100)
	binary.LittleEndian.PutUint16(buf[w+1:], pairs[r%100]+0x3030)
	return w + 3
}

// setRFC3339 makes v.rfcTxt the text of v.Now's millisecond.
func (v *Vars) setRFC3339() {
	ms := v.Now / 1e6
	if v.Now < ms*1e6 { // before 1970: floored
		ms--
	}
	secs, msec := ms/1e3, ms%1e3
	if msec < 0 {
		secs, msec = secs-1, msec+1e3
	}
	if !v.rfcSet || secs != v.rfcSec {
		days, sod := secs/86400, secs%86400
		if sod < 0 {
			sod += 86400
			days--
		}
		y, m, d := civil(days)
		b := append4(v.rfcTxt[:0], y)
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
		v.rfcTxt[19], v.rfcTxt[23] = '.', 'Z'
		v.rfcSec = secs
	}
	v.rfcTxt[20], v.rfcTxt[21], v.rfcTxt[22] = byte('0'+msec/100), byte('0'+msec/10%10), byte('0'+msec%10)
	v.rfcMS, v.rfcSet = ms, true
	v.rfcFrom, v.rfcSpan = ms*1e6, 1e6 // wraps past int64's range as Now-rfcFrom does
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

// pow10 are the scales putFixed takes.
var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18}

// putFixed writes v with prec decimals at buf[w:], as strconv.AppendFloat(dst, v, 'f', prec,
// 64) would for |v| × 10^prec below 2^62, by way of one integer (a fifth of its cost); past
// that, by AppendFloat. It returns the end.
func putFixed(buf []byte, w int, v float64, prec int) int {
	if prec >= len(pow10) || math.Abs(v)*pow10[prec] >= 1<<62 {
		return w + len(strconv.AppendFloat(buf[w:w], v, 'f', prec, 64))
	}
	n := int64(math.Round(v * pow10[prec]))
	if n < 0 {
		buf[w] = '-'
		w++
		n = -n
	}
	return putScaled(buf, w, n, prec)
}

// putScaled writes n × 10^-prec with prec decimals at buf[w:] and returns the end: the
// digits of n with a point before the last prec of them. It may write up to 7 bytes past
// the end.
func putScaled(buf []byte, w int, n int64, prec int) int {
	if n < 0 {
		buf[w] = '-'
		w++
		n = -n
	}
	u := uint64(n)
	if prec == 0 {
		return putUint(buf, w, u)
	}
	if u < 1e8 && prec < 8 { // eight digits at most: one word, and the point put in
		d := max(decimalLen(u), prec+1)
		x := (digits8(uint32(u)) + zeros) >> (8 * (8 - d))
		k := d - prec // digits before the point
		binary.LittleEndian.PutUint64(buf[w:w+8], x)
		binary.LittleEndian.PutUint64(buf[w+k:w+k+8], x>>(8*k)<<8|'.')
		return w + d + 1
	}
	scale := pow10u[prec]
	w = putUint(buf, w, u/scale)
	buf[w] = '.'
	end := w + 1 + prec
	for i, f := end-1, u%scale; i > w; i, f = i-1, f/10 {
		buf[i] = byte('0' + f%10)
	}
	return end
}

// pairs are the two-digit numbers 00 to 99 as two digits' values (0-9), the first in the
// low byte.
var pairs = func() (p [100]uint16) {
	for i := range p {
		p[i] = uint16(i/10) | uint16(i%10)<<8
	}
	return p
}()

// zeros turns eight digits' values into their ASCII text.
const zeros = 0x3030303030303030

// digits4 returns the values of n's (below 10^4) four digits, zeros before, the first in
// the low byte.
func digits4(n uint32) uint64 {
	return uint64(pairs[n/100]) | uint64(pairs[n%100])<<16
}

// digits8 returns the values of n's (below 10^8) eight digits, zeros before, the first in
// the low byte: four pairs, no loop.
func digits8(n uint32) uint64 {
	hi, lo := n/10000, n%10000
	return uint64(pairs[hi/100]) | uint64(pairs[hi%100])<<16 | uint64(pairs[lo/100])<<32 | uint64(pairs[lo%100])<<48
}

// pow10u are the powers of ten a uint64 holds, for decimalLen.
var pow10u = [...]uint64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13,
	1e14, 1e15, 1e16, 1e17, 1e18, 1e19}

// decimalLen returns how many decimal digits n has.
func decimalLen(n uint64) int {
	d := bits.Len64(n|1) * 1233 >> 12 // ⌊log10 2^bits⌋: n has d or d+1 digits
	if n >= pow10u[d] {
		d++
	}
	return max(d, 1)
}

// putUint writes n in decimal at buf[w:] and returns the end; it may write up to 7 bytes
// past it.
func putUint(buf []byte, w int, n uint64) int {
	if n >= 1e8 {
		hi := n / 1e8
		w = putUint(buf, w, hi)
		binary.LittleEndian.PutUint64(buf[w:w+8], digits8(uint32(n-hi*1e8))+zeros)
		return w + 8
	}
	d := decimalLen(n)
	binary.LittleEndian.PutUint64(buf[w:w+8], (digits8(uint32(n))+zeros)>>(8*(8-d)))
	return w + d
}

// putInt writes n in decimal at buf[w:] and returns the end; it may write up to 7 bytes past
// it.
func putInt(buf []byte, w int, n int64) int {
	if n < 0 {
		buf[w] = '-'
		return putUint(buf, w+1, uint64(-n))
	}
	return putUint(buf, w, uint64(n))
}
