package scenario

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Placeholders of topic templates.
const (
	// PlaceholderIndex expands to the client's 0-based index in its group.
	PlaceholderIndex = "$clientindex"
	// PlaceholderID expands to the client's id (id_prefix + index, or the group's
	// client_id template rendered).
	PlaceholderID = "$clientid"
)

// MaxIndexPad is the widest zero padding of $clientindex:W.
const MaxIndexPad = 18

const (
	phNone byte = iota
	phIndex
	phID
	phIndexMod // $clientindex%N: the index modulo part.mod
)

// part is a piece of a topic template: literal text or a placeholder.
type part struct {
	lit string
	ph  byte
	mod int // phIndexMod's N (0: a modulo 0, which validation refuses)
	// pad is the W of phIndex's or phIndexMod's ":W": the index zero-padded to W digits
	// (0: none; -1: ":0", which validation refuses).
	pad int
}

// modulo returns the N of a "%N" at the start of s (the digits after "$clientindex") and
// its length; n is 0 when s holds no "%" and digit. N is capped above the largest index.
func modulo(s string) (mod, n int) {
	if len(s) < 2 || s[0] != '%' || s[1] < '0' || s[1] > '9' {
		return 0, 0
	}
	n = 1
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		if mod < 1e12 {
			mod = mod*10 + int(s[n]-'0')
		}
		n++
	}
	return mod, n
}

// padding returns the W of a ":W" at the start of s (the digits after "$clientindex" or its
// "%N"), -1 for a W of 0, and its length; n is 0 when s holds no ":" and digit. W is
// capped at MaxIndexPad+1, which validation refuses.
func padding(s string) (pad, n int) {
	if len(s) < 2 || s[0] != ':' || s[1] < '0' || s[1] > '9' {
		return 0, 0
	}
	n = 1
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		pad = min(pad*10+int(s[n]-'0'), MaxIndexPad+1)
		n++
	}
	if pad == 0 {
		pad = -1
	}
	return pad, n
}

// appendIndex appends j in decimal, zero-padded to pad digits.
func appendIndex(dst []byte, j, pad int) []byte {
	for d := decimalDigits(j); d < pad; d++ {
		dst = append(dst, '0')
	}
	return strconv.AppendInt(dst, int64(j), 10)
}

// decimalDigits returns the number of decimal digits of j ≥ 0.
func decimalDigits(j int) int {
	d := 1
	for ; j >= 10; j /= 10 {
		d++
	}
	return d
}

// template is a compiled topic template.
type template struct {
	raw     string
	parts   []part
	indexed bool // holds a placeholder: differs from client to client
}

func compileTemplate(raw string) template {
	t := template{raw: raw, parts: splitParts(raw)}
	for _, p := range t.parts {
		if p.ph != phNone {
			t.indexed = true
		}
	}
	return t
}

// splitParts cuts s into literal text and placeholders.
func splitParts(s string) []part {
	var out []part
	for {
		i := strings.Index(s, "$client")
		if i < 0 {
			break
		}
		var ph byte
		var n, mod, pad int
		switch {
		case strings.HasPrefix(s[i:], PlaceholderIndex):
			ph, n = phIndex, len(PlaceholderIndex)
			if m, k := modulo(s[i+n:]); k > 0 {
				ph, mod, n = phIndexMod, m, n+k
			}
			if w, k := padding(s[i+n:]); k > 0 {
				pad, n = w, n+k
			}
		case strings.HasPrefix(s[i:], PlaceholderID):
			ph, n = phID, len(PlaceholderID)
		default:
			out = append(out, part{lit: s[:i+1]})
			s = s[i+1:]
			continue
		}
		if i > 0 {
			out = append(out, part{lit: s[:i]})
		}
		out = append(out, part{ph: ph, mod: mod, pad: pad})
		s = s[i+n:]
	}
	if s != "" {
		out = append(out, part{lit: s})
	}
	return mergeLits(out)
}

func mergeLits(ps []part) []part {
	out := ps[:0]
	for _, p := range ps {
		if n := len(out); n > 0 && p.ph == phNone && out[n-1].ph == phNone {
			out[n-1].lit += p.lit
			continue
		}
		out = append(out, p)
	}
	return out
}

// appendParts appends the template expanded for client j of a group whose ids are id's.
func appendParts(dst []byte, parts []part, j int, id idForm) []byte {
	for _, p := range parts {
		switch p.ph {
		case phNone:
			dst = append(dst, p.lit...)
		case phIndex:
			dst = appendIndex(dst, j, p.pad)
		case phIndexMod:
			dst = appendIndex(dst, j%max(p.mod, 1), p.pad)
		case phID:
			dst = id.append(dst, j)
		}
	}
	return dst
}

// distinct returns how many distinct topics the template gives clients 0..n-1: 1 without a
// placeholder, n with one that names the client, at most N when each is modulo N.
func (t *template) distinct(n int) int {
	if !t.indexed {
		return 1
	}
	d := 1
	for _, p := range t.parts {
		switch p.ph {
		case phIndex, phID:
			return n
		case phIndexMod:
			d = max(d, min(n, max(p.mod, 1)))
		}
	}
	return d
}

func (t *template) expand(j int, id idForm) string {
	if !t.indexed {
		return t.raw
	}
	return string(appendParts(make([]byte, 0, len(t.raw)+len(id.prefix)+len(id.suffix)+8), t.parts, j, id))
}

// Kinds of filter levels.
const (
	lvLit byte = iota
	lvPlus
	lvHash
	lvTmpl
)

type level struct {
	kind  byte
	lit   string
	parts []part
}

// filter is a compiled subscription filter template.
type filter struct {
	template
	shared bool
	share  string // share name of a "$share/<name>/..." filter
	levels []level
}

const sharePrefix = "$share/"

// compileFilter compiles a filter template that passed checkFilter.
func compileFilter(raw string) filter {
	f := filter{template: compileTemplate(raw)}
	body := raw
	if strings.HasPrefix(raw, sharePrefix) {
		f.shared = true
		f.share, body, _ = strings.Cut(raw[len(sharePrefix):], "/")
	}
	for lv := range strings.SplitSeq(body, "/") {
		switch {
		case lv == "+":
			f.levels = append(f.levels, level{kind: lvPlus})
		case lv == "#":
			f.levels = append(f.levels, level{kind: lvHash})
		case strings.Contains(lv, "$client"):
			ps := splitParts(lv)
			if len(ps) == 1 && ps[0].ph == phNone {
				f.levels = append(f.levels, level{kind: lvLit, lit: lv})
				continue
			}
			f.levels = append(f.levels, level{kind: lvTmpl, parts: ps})
		default:
			f.levels = append(f.levels, level{kind: lvLit, lit: lv})
		}
	}
	return f
}

// match reports whether the filter of some client of its group matches topic, given how the
// group's ids are made. For a filter that differs per client (indexed) it returns the index of
// the one client whose filter matches (templates expand injectively, so there is at most one);
// otherwise j is -1 and every client's filter matches.
func (f *filter) match(topic string, id idForm) (j int, ok bool) {
	j = -1
	rest, done := topic, false
	for li := range f.levels {
		lv := &f.levels[li]
		// [MQTT-4.7.2-1] wildcards at the first level do not match topics starting with '$'.
		if li == 0 && (lv.kind == lvPlus || lv.kind == lvHash) && strings.HasPrefix(topic, "$") {
			return -1, false
		}
		if lv.kind == lvHash {
			return j, true // '#' also matches the parent level: "a/#" matches "a"
		}
		if done {
			return -1, false
		}
		var name string
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			name, rest = rest[:i], rest[i+1:]
		} else {
			name, done = rest, true
		}
		switch lv.kind {
		case lvLit:
			if name != lv.lit {
				return -1, false
			}
		case lvTmpl:
			k, ok := solveLevel(lv.parts, name, id, j)
			if !ok {
				return -1, false
			}
			j = k
		}
	}
	if !done {
		return -1, false
	}
	return j, true
}

// solveLevel finds the client index k whose expansion of parts equals name; if fixed ≥ 0
// only that index is tried.
func solveLevel(parts []part, name string, id idForm, fixed int) (int, bool) {
	if fixed >= 0 {
		return fixed, levelEquals(parts, fixed, id, name)
	}
	pos := 0
	var ph byte
	pad := 0 // the placeholder's zero padding: its index may start with a 0
	for _, p := range parts {
		if p.ph != phNone {
			ph, pad = p.ph, p.pad
			break
		}
		if !strings.HasPrefix(name[pos:], p.lit) {
			return -1, false
		}
		pos += len(p.lit)
	}
	if ph == phID {
		if !strings.HasPrefix(name[pos:], id.prefix) {
			return -1, false
		}
		pos += len(id.prefix)
		pad = id.pad
	}
	digits := 0
	for pos+digits < len(name) && digits < 18 && name[pos+digits] >= '0' && name[pos+digits] <= '9' {
		digits++
	}
	for n := 1; n <= digits; n++ {
		if n > 1 && name[pos] == '0' && pad <= 0 {
			break // unpadded indices have no leading zeros
		}
		k, _ := strconv.Atoi(name[pos : pos+n])
		if levelEquals(parts, k, id, name) {
			return k, true
		}
	}
	return -1, false
}

// levelEquals reports whether parts expanded for client k equal name, without allocating.
func levelEquals(parts []part, k int, id idForm, name string) bool {
	var buf [MaxIndexPad + 20]byte
	pos := 0
	eat := func(s string) bool {
		if !strings.HasPrefix(name[pos:], s) {
			return false
		}
		pos += len(s)
		return true
	}
	for _, p := range parts {
		switch p.ph {
		case phNone:
			if !eat(p.lit) {
				return false
			}
		case phIndex:
			if !eat(string(appendIndex(buf[:0], k, min(p.pad, MaxIndexPad)))) {
				return false
			}
		case phID:
			if !eat(id.prefix) || !eat(string(appendIndex(buf[:0], k, min(id.pad, MaxIndexPad)))) || !eat(id.suffix) {
				return false
			}
		}
	}
	return pos == len(name)
}

// maxTopicLen is the longest UTF-8 string MQTT can carry [MQTT-1.5.4].
const maxTopicLen = 65535

func checkUTF8(s string) error {
	switch {
	case s == "":
		return errors.New("is empty")
	case len(s) > maxTopicLen:
		return errors.New("is longer than 65535 bytes")
	case !utf8.ValidString(s):
		return errors.New("is not valid UTF-8") // [MQTT-1.5.4-1]
	case strings.ContainsRune(s, 0):
		return errors.New("holds U+0000") // [MQTT-1.5.4-2]
	}
	return nil
}

// checkTopicName checks a topic a client publishes to (expanded).
func checkTopicName(s string) error {
	if err := checkUTF8(s); err != nil {
		return err
	}
	if strings.ContainsAny(s, "+#") {
		return errors.New("holds a wildcard; a publisher needs a topic name, not a filter") // [MQTT-3.3.2-2]
	}
	if strings.HasPrefix(s, sharePrefix) {
		return errors.New("is a shared-subscription filter; a publisher needs a topic name")
	}
	return nil
}

// checkFilter checks a subscription filter (expanded).
func checkFilter(s string) error {
	if err := checkUTF8(s); err != nil {
		return err
	}
	body := s
	if strings.HasPrefix(s, sharePrefix) {
		name, rest, ok := strings.Cut(s[len(sharePrefix):], "/")
		switch {
		case name == "" || strings.ContainsAny(name, "+#"): // [MQTT-4.8.2-1], [MQTT-4.8.2-2]
			return errors.New("has no valid share name (want $share/<name>/<filter>)")
		case !ok || rest == "":
			return errors.New("has no filter after the share name (want $share/<name>/<filter>)")
		case strings.Contains(name, "$client"):
			return errors.New("has a placeholder in the share name")
		}
		body = rest
	}
	levels := strings.Split(body, "/")
	for i, lv := range levels {
		if lv == "#" && i != len(levels)-1 {
			return errors.New("has '#' before the last level") // [MQTT-4.7.1-1]
		}
		if lv != "#" && lv != "+" && strings.ContainsAny(lv, "+#") {
			return errors.New("has a wildcard that is not a whole level") // [MQTT-4.7.1-1]
		}
	}
	return nil
}

// avgLen returns the mean length of the template expanded for clients 0..n-1.
func (t *template) avgLen(n int, id idForm) float64 {
	if n < 1 {
		return float64(len(t.raw))
	}
	num := func(n, pad int) float64 { return float64(totalDigits(n, pad)) / float64(n) }
	l := 0.0
	for _, p := range t.parts {
		switch p.ph {
		case phNone:
			l += float64(len(p.lit))
		case phIndex:
			l += num(n, p.pad)
		case phIndexMod:
			l += num(min(n, max(p.mod, 1)), p.pad)
		case phID:
			l += float64(len(id.prefix)+len(id.suffix)) + num(n, id.pad)
		}
	}
	return l
}

// totalDigits returns the number of decimal digits of 0, 1, ..., n-1 together, each
// zero-padded to pad digits.
func totalDigits(n, pad int) int {
	total := 0
	for lo, d, end := 0, 1, 10; lo < n; lo, d, end = end, d+1, end*10 {
		total += (min(n, end) - lo) * max(d, pad) // the d-digit numbers [lo, end)
	}
	return total
}

// MaxTopicCycle is the most topics one publisher cycles over.
const MaxTopicCycle = 1000

// rangeAt finds the first range "{A..B}" in s (A and B decimal, A ≤ B for a valid one): its
// position, length and bounds; n is 0 when s holds none.
func rangeAt(s string) (i, n, a, b int) {
	for off := 0; ; {
		k := strings.IndexByte(s[off:], '{')
		if k < 0 {
			return 0, 0, 0, 0
		}
		i = off + k
		body, _, ok := strings.Cut(s[i+1:], "}")
		lo, hi, dots := strings.Cut(body, "..")
		if ok && dots && allDigits(lo) && allDigits(hi) && len(lo) <= 9 && len(hi) <= 9 {
			a, _ = strconv.Atoi(lo)
			b, _ = strconv.Atoi(hi)
			return i, len(body) + 2, a, b
		}
		off = i + 1
	}
}

func allDigits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// topicCycle returns the topic templates a publisher cycles over, in order: each of
// topics, a range "{A..B}" in one expanded to A, A+1, ..., B.
func topicCycle(topics []string) ([]string, error) {
	var out []string
	for _, t := range topics {
		i, n, a, b := rangeAt(t)
		if n == 0 {
			out = append(out, t)
			continue
		}
		if _, m, _, _ := rangeAt(t[i+n:]); m > 0 {
			return nil, fmt.Errorf("%s holds two ranges (one {A..B} a topic)", strconv.Quote(t))
		}
		if a > b {
			return nil, fmt.Errorf("%s has the range {%d..%d}, which is empty (want {A..B} with A ≤ B)", strconv.Quote(t), a, b)
		}
		if b-a >= MaxTopicCycle {
			return nil, fmt.Errorf("%s has a range of %d topics (max %d)", strconv.Quote(t), b-a+1, MaxTopicCycle)
		}
		for v := a; v <= b; v++ {
			out = append(out, t[:i]+strconv.Itoa(v)+t[i+n:])
		}
	}
	if len(out) > MaxTopicCycle {
		return nil, fmt.Errorf("%d topics to cycle over (max %d)", len(out), MaxTopicCycle)
	}
	return out, nil
}
