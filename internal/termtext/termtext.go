package termtext

import "unicode/utf8"

// Line returns s with every character that could act on a terminal or break a line
// escaped (see the package comment), for text that goes into one line: a table cell, a
// summary value, a log header, a progress line.
func Line(s string) string { return escape(s, false) }

// Text is Line for text of several lines: it keeps newlines and tabs and escapes the rest,
// carriage returns included. Use it only where the lines are the writer's own (an error
// that lists its problems a line each); a foreign value inside such text is Line first.
func Text(s string) string { return escape(s, true) }

func escape(s string, lines bool) string {
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if needsEscape(r, n, lines) {
			break
		}
		i += n
	}
	if i == len(s) {
		return s
	}
	b := make([]byte, 0, len(s)+16)
	b = append(b, s[:i]...)
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case !needsEscape(r, n, lines):
			b = append(b, s[i:i+n]...)
		case r == utf8.RuneError: // an invalid byte
			b = appendHex(b, 'x', uint32(s[i]), 2)
		case r == '\n':
			b = append(b, `\n`...)
		case r == '\r':
			b = append(b, `\r`...)
		case r == '\t':
			b = append(b, `\t`...)
		case r < 0x80: // C0 and DEL
			b = appendHex(b, 'x', uint32(r), 2)
		default:
			b = appendHex(b, 'u', uint32(r), 4)
		}
		i += n
	}
	return string(b)
}

// needsEscape reports whether the rune r, n bytes of UTF-8, must be escaped.
func needsEscape(r rune, n int, lines bool) bool {
	switch {
	case r == utf8.RuneError && n == 1:
		return true // invalid UTF-8 (a terminal may read it as a C1 control)
	case r == '\n' || r == '\t':
		return !lines
	case r < 0x20 || r == 0x7f: // C0, DEL
		return true
	case r < 0x80:
		return false
	case r <= 0x9f: // C1: CSI, OSC, NEL ... in their 8-bit forms
		return true
	}
	switch r {
	case 0x061c, 0x200e, 0x200f, // ALM, LRM, RLM
		0x202a, 0x202b, 0x202c, 0x202d, 0x202e, // LRE, RLE, PDF, LRO, RLO
		0x2066, 0x2067, 0x2068, 0x2069, // LRI, RLI, FSI, PDI
		0x2028, 0x2029: // line and paragraph separators
		return true
	}
	return false
}

const hexDigits = "0123456789abcdef"

// appendHex appends `\` kind and v as digits hex digits.
func appendHex(b []byte, kind byte, v uint32, digits int) []byte {
	b = append(b, '\\', kind)
	for d := digits - 1; d >= 0; d-- {
		b = append(b, hexDigits[v>>(4*d)&0xf])
	}
	return b
}
