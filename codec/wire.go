package codec

import (
	"encoding/binary"
	"unicode/utf8"
)

func appendU16(dst []byte, v uint16) []byte { return append(dst, byte(v>>8), byte(v)) }

func appendU32(dst []byte, v uint32) []byte {
	return append(dst, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}

// appendStr appends a two-byte length and s (a UTF-8 string or binary data field).
func appendStr(dst []byte, s []byte) []byte {
	dst = append(dst, byte(len(s)>>8), byte(len(s)))
	return append(dst, s...)
}

// The readers take the whole body and an offset, and return the value and the next offset.

func readByte(b []byte, off int) (byte, int, error) {
	if off >= len(b) {
		return 0, off, ErrTruncated
	}
	return b[off], off + 1, nil
}

func readU16(b []byte, off int) (uint16, int, error) {
	if len(b)-off < 2 {
		return 0, off, ErrTruncated
	}
	return uint16(b[off])<<8 | uint16(b[off+1]), off + 2, nil
}

func readU32(b []byte, off int) (uint32, int, error) {
	if len(b)-off < 4 {
		return 0, off, ErrTruncated
	}
	return uint32(b[off])<<24 | uint32(b[off+1])<<16 | uint32(b[off+2])<<8 | uint32(b[off+3]), off + 4, nil
}

// readBin reads a length-prefixed field without checking its contents.
func readBin(b []byte, off int) ([]byte, int, error) {
	if len(b)-off < 2 {
		return nil, off, ErrTruncated
	}
	n := int(b[off])<<8 | int(b[off+1])
	off += 2
	if len(b)-off < n {
		return nil, off, ErrTruncated
	}
	return b[off : off+n : off+n], off + n, nil
}

// readStr reads a UTF-8 string field and checks it.
func readStr(b []byte, off int) ([]byte, int, error) {
	s, off, err := readBin(b, off)
	if err != nil {
		return nil, off, err
	}
	if !validString(s) {
		return nil, off, ErrMalformedString
	}
	return s, off, nil
}

// readVarint reads a variable byte integer inside a packet body.
func readVarint(b []byte, off int) (int, int, error) {
	v := 0
	for i := 0; i < 4; i++ {
		if off >= len(b) {
			return 0, off, ErrMalformedVarint
		}
		c := b[off]
		off++
		v |= int(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			if c == 0 && i > 0 {
				return 0, off, ErrMalformedVarint // [MQTT-1.5.5-1]
			}
			return v, off, nil
		}
	}
	return 0, off, ErrMalformedVarint // [MQTT-1.5.5] at most four bytes
}

// validString reports whether s is well-formed UTF-8 without U+0000. Surrogates are rejected by
// utf8.Valid already ([MQTT-1.5.4-1] [MQTT-1.5.4-2], 3.1.1: [MQTT-1.5.3-1] [MQTT-1.5.3-2]).
func validString(s []byte) bool {
	for i, c := range s {
		if c == 0 {
			return false
		}
		if c >= utf8.RuneSelf {
			return validRest(s[i:])
		}
	}
	return true
}

func validRest(s []byte) bool {
	for _, c := range s {
		if c == 0 {
			return false
		}
	}
	return utf8.Valid(s)
}

// topicByte marks the ASCII bytes that may appear in a topic name as they are: not U+0000, not
// a wildcard, not the start of a multi-byte sequence.
var topicByte = func() (t [256]bool) {
	for c := 1; c < utf8.RuneSelf; c++ {
		t[c] = c != '+' && c != '#'
	}
	return t
}()

// checkTopicName checks a PUBLISH topic name in one pass: well-formed UTF-8 without U+0000
// ([MQTT-1.5.4-1] [MQTT-1.5.4-2]) and without wildcards ([MQTT-3.3.2-2]). One pass with a table
// instead of validString then validTopicName saves about a third of DecodePublish (benchmark
// DecodePublish/v311/qos1/16B).
func checkTopicName(s []byte) error {
	// Skip 8 bytes at a time while none is U+0000, a wildcard or non-ASCII (SWAR; any hit, or a
	// false one, falls through to the byte loop, which decides).
	i := 0
	for ; len(s)-i >= 8; i += 8 {
		w := binary.LittleEndian.Uint64(s[i:])
		if (hasZeroByte(w)|hasZeroByte(w^lanes('+'))|hasZeroByte(w^lanes('#'))|w)&lanes(0x80) != 0 {
			break
		}
	}
	for ; i < len(s); i++ {
		if topicByte[s[i]] {
			continue
		}
		if s[i] >= utf8.RuneSelf {
			if !validRest(s[i:]) {
				return ErrMalformedString
			}
			if !validTopicName(s[i:]) {
				return ErrMalformedTopic
			}
			return nil
		}
		if s[i] == 0 {
			return ErrMalformedString
		}
		return ErrMalformedTopic
	}
	return nil
}

func lanes(c byte) uint64 { return uint64(c) * 0x0101010101010101 }

// hasZeroByte has its 0x80 bit set in some byte if and only if w has a zero byte.
func hasZeroByte(w uint64) uint64 { return (w - lanes(1)) &^ w & lanes(0x80) }

// validTopicName reports whether a PUBLISH or will topic name (already a valid string) is free
// of wildcards ([MQTT-3.3.2-2] [MQTT-4.7.1-1]).
func validTopicName(s []byte) bool {
	for _, c := range s {
		if c == '+' || c == '#' {
			return false
		}
	}
	return true
}

// validTopicFilter reports whether a topic filter (already a valid string) is non-empty and has
// its wildcards in place: "#" only as the whole last level, "+" only as a whole level.
func validTopicFilter(s []byte) bool {
	if len(s) == 0 {
		return false // [MQTT-4.7.3-1]
	}
	for i, c := range s {
		switch c {
		case '#':
			if i != len(s)-1 || (i > 0 && s[i-1] != '/') {
				return false // [MQTT-4.7.1-2]
			}
		case '+':
			if (i > 0 && s[i-1] != '/') || (i < len(s)-1 && s[i+1] != '/') {
				return false // [MQTT-4.7.1-3]
			}
		}
	}
	return true
}

// isShared reports whether a topic filter names a shared subscription.
func isShared(s []byte) bool { return len(s) > 7 && string(s[:7]) == "$share/" }
