package reactor

import (
	"bytes"
	"encoding/binary"
	"slices"

	"github.com/mqblast/mqblast/internal/payloadtpl"
)

// HeaderSize is the size of the measurement header at the start of every measured payload,
// which lets a receiver measure latency from the time the message was due and tell its
// run's messages from any other's. Big-endian: bytes 0-5 the due time's low 48 bits
// (CLOCK_REALTIME ns; the receiver takes the value nearest its own clock, so up to 39 h
// either way, clock skew between hosts and negative latencies included), bytes 6-7 the
// run's tag (Config.RunTag), byte 8 the magic (headerMagic), bytes 9-11 the publisher
// number, bytes 12-15 the sequence number. A payload of 24 bytes or more also carries the
// actual write time (int64 ns) after it, so that receivers can report raw latency. A
// payload whose ninth byte is not the magic is not mqblast's (unmeasured); bench also
// checks that the due time is plausible and the tag the run's own.
const HeaderSize = 16

// headerMagic marks a measurement header; numberMask keeps the publisher number beside it
// (publishers are numbered below 1<<24).
const (
	headerMagic = 0xb7
	numberMask  = 1<<24 - 1
)

// MaxPublishers is how many publishers a plan may have: their numbers share a header word
// with the magic byte.
const MaxPublishers = numberMask + 1

// MeasuredSize is how many measurement bytes a payload of that size or more starts with:
// the header (HeaderSize) and the actual write time after it (int64 ns, CLOCK_REALTIME).
// The payload's text (Config.Payload) follows them.
const MeasuredSize = HeaderSize + 8

// sentAtSize is the payload size from which the write time follows the header.
const sentAtSize = MeasuredSize

// PutHeader writes the measurement header of publisher's message seq of the run tagged
// run, due at due (CLOCK_REALTIME ns), into the first HeaderSize bytes of pl, as publishers
// do: for servers and tests that send messages of their own in mqblast's format.
func PutHeader(pl []byte, due int64, run uint16, publisher, seq uint32) {
	binary.BigEndian.PutUint64(pl[0:8], uint64(due)<<16|uint64(run))
	binary.BigEndian.PutUint32(pl[8:12], headerMagic<<24|publisher&numberMask)
	binary.BigEndian.PutUint32(pl[12:16], seq)
}

// ReadHeader reads the run tag, publisher and sequence number of a payload's measurement
// header (ok false: the payload has none), for servers and tests that route mqblast's
// messages.
func ReadHeader(pl []byte) (run uint16, publisher, seq uint32, ok bool) {
	if len(pl) < HeaderSize || pl[8] != headerMagic {
		return 0, 0, 0, false
	}
	return binary.BigEndian.Uint16(pl[6:8]), binary.BigEndian.Uint32(pl[8:12]) & numberMask, binary.BigEndian.Uint32(pl[12:16]), true
}

// dueNear rebuilds a due time from its low 48 bits d, as the header carries it: the value
// nearest to now (CLOCK_REALTIME ns), within 2^47 ns (39 h) either way. Branch-free.
func dueNear(d uint64, now int64) int64 {
	return now + int64((d-uint64(now))<<16)>>16
}

// markPrefix starts the text measurement mark: the measurement bytes (MeasuredSize: header
// and write time) as lowercase hex after it, payloadtpl.MarkLen characters in all, letters
// and digits only so that it stands inside a JSON string. A payload template places it
// ({{mark}}); a receiver finds it anywhere in the payload.
const markPrefix = "MQB1"

// markLen is the width of the text mark.
const markLen = len(markPrefix) + 2*MeasuredSize

// The template package reserves the mark's width.
var _ = [1]struct{}{}[markLen-payloadtpl.MarkLen]

// appendMark appends the text mark of measurement bytes h (MeasuredSize) to dst.
func appendMark(dst, h []byte) []byte {
	n := len(dst)
	dst = slices.Grow(dst, markLen)[:n+markLen]
	putMark((*[markLen]byte)(dst[n:]), (*[MeasuredSize]byte)(h))
	return dst
}

// putMark writes the text mark of measurement bytes h to m: four bytes' hex digits from a
// table to a word (encoding/hex's byte a step was a sixth of a templated message's cost in
// BenchmarkPublishPassTemplate).
func putMark(m *[markLen]byte, h *[MeasuredSize]byte) {
	copy(m[:], markPrefix)
	// Unrolled, the indexes constant: no loop, no bounds checks (the loop took 128
	// instructions a mark, BenchmarkPublishPassTemplate under callgrind; this, 109).
	hex8 := func(k int) {
		x := uint64(hexPairs[h[k]]) | uint64(hexPairs[h[k+1]])<<16 | uint64(hexPairs[h[k+2]])<<32 | uint64(hexPairs[h[k+3]])<<48
		binary.LittleEndian.PutUint64(m[len(markPrefix)+2*k:], x)
	}
	hex8(0)
	hex8(4)
	hex8(8)
	hex8(12)
	hex8(16)
	hex8(20)
	var _ = [1]struct{}{}[MeasuredSize-24] // six steps of four bytes
}

// hexPairs are the bytes' two lowercase hex digits, the first in the low byte.
var hexPairs = func() (t [256]uint16) {
	const digits = "0123456789abcdef"
	for i := range t {
		t[i] = uint16(digits[i>>4]) | uint16(digits[i&15])<<8
	}
	return t
}()

// findMark looks for a text mark in pl and, when it finds one whose header has the magic,
// writes its measurement bytes to h.
func findMark(pl []byte, h *[MeasuredSize]byte) bool {
	for {
		i := bytes.Index(pl, []byte(markPrefix))
		if i < 0 {
			return false
		}
		pl = pl[i+len(markPrefix):]
		if len(pl) >= 2*MeasuredSize && unhex(pl[:2*MeasuredSize], h) && h[8] == headerMagic {
			return true
		}
	}
}

// unhex decodes lowercase hex src into h (len(src) == 2*len(h)).
func unhex(src []byte, h *[MeasuredSize]byte) bool {
	for k := range h {
		hi, lo := hexVal(src[2*k]), hexVal(src[2*k+1])
		if hi > 15 || lo > 15 {
			return false
		}
		h[k] = hi<<4 | lo
	}
	return true
}

func hexVal(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	}
	return 255
}
