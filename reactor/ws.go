package reactor

import (
	"bytes"
	"crypto/rand"
	"crypto/sha1" //nolint:gosec // RFC 6455 defines Sec-WebSocket-Accept with SHA-1
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	mrand "math/rand/v2"

	"github.com/mqblast/mqblast/codec"
)

// MQTT over WebSocket (RFC 6455, MQTT 5.0 section 6): the HTTP/1.1 upgrade with subprotocol
// "mqtt", then binary frames. The client sends the packets of a write batch in one masked
// binary frame (several when the batch is longer than wsFrameMax); it reads the broker's
// frames as one byte stream (a packet may span frames and a frame hold several), answers a
// ping with a pong, and takes a close frame as the broker closing the connection.

// WebSocket opcodes.
const (
	wsContinuation = 0x0
	wsText         = 0x1
	wsBinary       = 0x2
	wsClose        = 0x8
	wsPing         = 0x9
	wsPong         = 0xA
	wsInFrame      = 0x80 // transport.op: a frame's payload is being read
)

// wsGUID is RFC 6455's key suffix for Sec-WebSocket-Accept.
const wsGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// wsFrameMax is the most MQTT bytes the client puts in one frame, unless one packet is
// longer: a frame holds the whole packets of a write batch up to it (MQTT 5.0 and 3.1.1
// section 6: a frame may hold several packets, and the receiver must not assume they align).
// One frame for many packets draws one masking key and writes one header for them all; no
// packet is cut across frames, for brokers that do assume it.
const wsFrameMax = 16 << 10

// appendFrames appends the MQTT packets of b to dst as masked binary frames, each with a
// fresh masking key from keys: the whole packets of b in frames of up to wsFrameMax bytes,
// a longer packet in a frame of its own. A tail that is not a whole packet (the loop never
// writes one) goes in the last frame.
func appendFrames(dst, b []byte, keys *maskKeys) []byte {
	for len(b) > 0 {
		n := 0
		for n < len(b) {
			m := packetLen(b[n:])
			if m <= 0 || m > len(b)-n {
				m = len(b) - n
			}
			if n > 0 && n+m > wsFrameMax {
				break
			}
			n += m
		}
		dst = appendFrame(dst, wsBinary, b[:n], keys.next())
		b = b[n:]
	}
	return dst
}

// maskKeys draws masking keys: wyrand, seeded from the system's random source, one per
// loop (a frame's key costs a nanosecond, not a ChaCha8 draw). RFC 6455 wants keys a
// browser's script cannot predict (section 10.3); a load generator runs no such script.
type maskKeys struct{ s uint64 }

func newMaskKeys() maskKeys { return maskKeys{s: mrand.Uint64()} }

func (k *maskKeys) next() uint32 {
	k.s += 0xa0761d6478bd642f
	hi, lo := bits.Mul64(k.s, k.s^0xe7037ed1a0b428db)
	return uint32(hi ^ lo)
}

// packetLen returns the length of the MQTT packet at the start of b from its fixed header
// (0: the header is not whole).
func packetLen(b []byte) int {
	rl, mul := 0, 1
	for i := 1; i < len(b) && i <= 4; i++ {
		rl += int(b[i]&0x7f) * mul
		if b[i]&0x80 == 0 {
			return 1 + i + rl
		}
		mul <<= 7
	}
	return 0
}

// appendFrame appends one final frame of opcode op with payload p, masked with key.
func appendFrame(dst []byte, op byte, p []byte, key uint32) []byte {
	n, i := len(p), len(dst)
	dst = slices.Grow(dst, n+14)[:i+n+14]
	dst[i] = 0x80 | op
	switch {
	case n < 126:
		dst[i+1] = 0x80 | byte(n)
		i += 2
	case n < 1<<16:
		dst[i+1] = 0x80 | 126
		binary.BigEndian.PutUint16(dst[i+2:], uint16(n))
		i += 4
	default:
		dst[i+1] = 0x80 | 127
		binary.BigEndian.PutUint64(dst[i+2:], uint64(n))
		i += 10
	}
	binary.LittleEndian.PutUint32(dst[i:], key)
	i += 4
	maskCopy(dst[i:i+n], p, key)
	return dst[:i+n]
}

// maskCopy writes src XORed with the masking key to dst (as long as src), in one pass:
// 32 bytes a round, then 8, then the rest. key's bytes in little-endian order are the key's
// octets in wire order; the loads and stores are unaligned (encoding/binary's, one
// instruction each on amd64 and arm64).
func maskCopy(dst, src []byte, key uint32) {
	dst = dst[:len(src)]
	k := uint64(key) | uint64(key)<<32
	for len(src) >= 32 {
		d, s := dst[:32:32], src[:32:32]
		binary.LittleEndian.PutUint64(d, binary.LittleEndian.Uint64(s)^k)
		binary.LittleEndian.PutUint64(d[8:], binary.LittleEndian.Uint64(s[8:])^k)
		binary.LittleEndian.PutUint64(d[16:], binary.LittleEndian.Uint64(s[16:])^k)
		binary.LittleEndian.PutUint64(d[24:], binary.LittleEndian.Uint64(s[24:])^k)
		dst, src = dst[32:], src[32:]
	}
	for len(src) >= 8 {
		binary.LittleEndian.PutUint64(dst, binary.LittleEndian.Uint64(src)^k)
		dst, src = dst[8:], src[8:]
	}
	if len(src) >= 4 {
		binary.LittleEndian.PutUint32(dst, binary.LittleEndian.Uint32(src)^key)
		dst, src = dst[4:], src[4:]
	}
	for i := range src {
		dst[i] = src[i] ^ byte(key>>(8*(i&3)))
	}
}

// wsHeader parses a frame header at the start of p: its length, first byte (FIN, RSV1-3,
// opcode), payload length and whether it is masked. ok is false while p holds less than the
// whole header.
func wsHeader(p []byte) (hlen int, b0 byte, plen uint64, masked, ok bool) {
	if len(p) < 2 {
		return 0, 0, 0, false, false
	}
	b0, masked = p[0], p[1]&0x80 != 0
	hlen, plen = 2, uint64(p[1]&0x7f)
	switch plen {
	case 126:
		hlen = 4
	case 127:
		hlen = 10
	}
	if masked {
		hlen += 4
	}
	if len(p) < hlen {
		return hlen, b0, 0, masked, false
	}
	switch plen {
	case 126:
		plen = uint64(binary.BigEndian.Uint16(p[2:]))
	case 127:
		plen = binary.BigEndian.Uint64(p[2:])
	}
	return hlen, b0, plen, masked, true
}

// wsMaxFrame is the longest frame the client takes: the largest MQTT packet. A frame may
// hold several packets (MQTT 5.0 section 6.0; EMQX sends what it has for a connection in
// one frame), so the client's own inbound limit does not bound it; a broker that puts more
// than 256 MiB in one frame sends nothing a client of a load test can use.
const wsMaxFrame = codec.MaxRemainingLength + 5

// wsError is a frame that fails the WebSocket connection (RFC 6455 section 7.1.7): the
// client answers it with a close frame with status, then closes.
type wsError struct {
	status uint16
	msg    string
}

func (e *wsError) Error() string { return e.msg }

// WebSocket status codes of the client's close frames (RFC 6455 section 7.4.1).
const (
	wsStatusNormal      = 1000
	wsStatusProtocol    = 1002
	wsStatusUnsupported = 1003
	wsStatusTooBig      = 1009
)

// Frames no broker may send.
var (
	errWSText = &wsError{wsStatusUnsupported,
		"WebSocket: the broker sent a text frame; MQTT travels in binary frames only"}
	errWSReserved = &wsError{wsStatusProtocol,
		"WebSocket: the broker set a reserved bit (RSV1-3) of a frame header, and no extension was agreed"}
	errWSMasked = &wsError{wsStatusProtocol,
		"WebSocket: the broker sent a masked frame (a server never masks)"}
	errWSControl = &wsError{wsStatusProtocol,
		"WebSocket: the broker sent a control frame that is fragmented or over 125 bytes"}
	errWSContinuation = &wsError{wsStatusProtocol,
		"WebSocket: the broker sent a continuation frame with no message started"}
	errWSInterleaved = &wsError{wsStatusProtocol,
		"WebSocket: the broker started a new data frame inside a fragmented message"}
	errWSLength = &wsError{wsStatusProtocol,
		"WebSocket: the broker sent a frame length with its most significant bit set"}
)

// frameError checks a frame header from the broker (first byte b0, payload length plen)
// against RFC 6455 and MQTT's rule for WebSocket, given whether a fragmented message is
// under way: nil, or the wsError that fails the connection.
func frameError(b0 byte, plen uint64, masked, frag bool) error {
	op := b0 & 0x0f
	switch {
	case b0&0x70 != 0:
		return errWSReserved
	case masked:
		return errWSMasked
	case op == wsText: // [MQTT-6.0.0-1]
		return errWSText
	case op == wsContinuation && !frag:
		return errWSContinuation
	case op == wsBinary && frag:
		return errWSInterleaved
	case op > wsPong || (op > wsBinary && op < wsClose):
		return &wsError{wsStatusProtocol, fmt.Sprintf("WebSocket: the broker sent a frame with reserved opcode %#x", op)}
	case op&0x8 != 0 && (b0&0x80 == 0 || plen > 125):
		return errWSControl
	case plen >= 1<<63:
		return errWSLength
	case plen > wsMaxFrame:
		return &wsError{wsStatusTooBig, fmt.Sprintf(
			"WebSocket: the broker's frame header claims %d bytes, more than the largest MQTT packet (%d bytes)", plen, wsMaxFrame)}
	}
	return nil
}

// unframe turns the frames in b (what one read brought, after TLS) into their payload
// bytes, in place at the start of b, and returns them. A header or control payload that
// b cuts waits in t.buf. Pings are answered. A close frame from the broker, or a header
// that breaks the rules, ends the frames taken (t.end, its status code or the header kept
// in t.buf): the payloads before it are returned, and wsEnded acts on it once they are
// handled. lost reports a connection lost while writing the pongs.
func (l *loop) unframe(s *session, t *transport, b []byte) (out []byte, lost bool) {
	out = b[:0]
	for len(b) > 0 && t.end == 0 {
		// The usual frame, whole in this read: final, binary, unmasked, under 126 bytes
		// (a 7-bit length under 126 has the mask bit clear), no message fragmented.
		if t.op&wsInFrame == 0 && len(t.buf) == 0 && !t.frag && len(b) >= 2 && b[0] == 0x80|wsBinary && b[1] < 126 {
			if n := 2 + int(b[1]); n <= len(b) {
				out = append(out, b[2:n]...) // in place: out never overtakes b
				b = b[n:]
				continue
			}
		}
		if t.op&wsInFrame == 0 {
			var hlen int
			var b0 byte
			var masked, ok bool
			var plen uint64
			var hdr []byte
			if len(t.buf) > 0 { // a header cut by the last read
				old := len(t.buf)
				t.buf = append(t.buf, b[:min(len(b), 14-old)]...)
				hlen, b0, plen, masked, ok = wsHeader(t.buf)
				if !ok {
					b = b[len(t.buf)-old:]
					continue
				}
				hdr, b = t.buf[:hlen], b[hlen-old:]
			} else {
				hlen, b0, plen, masked, ok = wsHeader(b)
				if !ok {
					t.buf = append(t.buf[:0], b...)
					break
				}
				hdr, b = b[:hlen], b[hlen:]
			}
			// The usual frame (final, binary, unmasked, not too long) skips the full check.
			if (b0 != 0x80|wsBinary || masked || t.frag || plen > wsMaxFrame) && frameError(b0, plen, masked, t.frag) != nil {
				t.buf = append(t.buf[:0], hdr...) // for wsEnded
				t.end = wsEndInvalid
				break
			}
			t.buf = t.buf[:0]
			op := b0 & 0x0f
			if op < wsClose {
				t.frag = b0&0x80 == 0
			}
			t.op, t.rem = op|wsInFrame, plen
		}
		k := int(min(t.rem, uint64(len(b))))
		if op := t.op &^ wsInFrame; op < wsClose {
			out = append(out, b[:k]...) // in place: out never overtakes b
		} else {
			t.buf = append(t.buf, b[:k]...)
		}
		b = b[k:]
		t.rem -= uint64(k)
		if t.rem > 0 {
			break
		}
		op := t.op &^ wsInFrame
		t.op = 0
		switch op {
		case wsPing:
			l.ctl = appendFrame(l.ctl, wsPong, t.buf, l.keys.next())
			t.buf = t.buf[:0]
		case wsPong:
			t.buf = t.buf[:0]
		case wsClose:
			t.buf = t.buf[:min(len(t.buf), 2)] // its status code, echoed by wsEnded
			t.end = wsEndClose
		}
	}
	if len(l.ctl) > 0 {
		w := l.seal(t, l.ctl)
		l.ctl = l.ctl[:0]
		if l.sendRaw(s, w) < 0 {
			return nil, true
		}
	}
	return out, false
}

// How the broker's frames ended (transport.end).
const (
	wsEndClose   = 1 // a close frame
	wsEndInvalid = 2 // a frame header that breaks the rules (frameError)
)

// wsEnded ends s, whose broker's frames ended (t.end) and whose bytes before that are
// handled. A close frame is answered with a close frame echoing its status code (RFC 6455
// section 5.5.1), and the connection closed as the broker's doing; an invalid frame fails
// the connection (protocolError).
func (l *loop) wsEnded(s *session, t *transport) {
	if t.end == wsEndInvalid {
		_, b0, plen, masked, _ := wsHeader(t.buf)
		l.protocolError(s, frameError(b0, plen, masked, t.frag))
		return
	}
	if l.sendClose(s, t, t.buf) {
		l.lost(s, nil)
	}
}

// sendClose sends a close frame with payload p on s (through TLS on wss://). It reports
// false when the write lost the connection (lost has reported it).
func (l *loop) sendClose(s *session, t *transport, p []byte) bool {
	l.ctl = appendFrame(l.ctl[:0], wsClose, p, l.keys.next())
	w := l.seal(t, l.ctl)
	l.ctl = l.ctl[:0]
	return l.sendRaw(s, w) >= 0
}

// wsCloseFrame ends a WebSocket session's stream with a close frame, status 1000 (normal
// closure), before the TCP close, as RFC 6455 section 5.5.1 asks: without it a broker reads
// an abnormal closure (1006). It waits for no reply; other sessions do nothing.
func (l *loop) wsCloseFrame(s *session) {
	if s.flags&sfTransport == 0 || s.state == stClosing {
		return
	}
	t := l.transportOf(s)
	if t == nil || !t.ws {
		return
	}
	status := [2]byte{wsStatusNormal >> 8, wsStatusNormal & 0xff}
	_ = l.sendClose(s, t, status[:])
}

// dialWS starts client s's connection to the ws:// broker tg on the loop, like a TCP dial
// (see dial): connect(), and the upgrade request written at once when the TCP handshake is
// already done, else at EPOLLOUT (tcpConnected).
func (l *loop) dialWS(s *session, fd int, dst unix.Sockaddr, tg *target) {
	e := l.e
	t := &transport{ws: true}
	written := false
	err := unix.Connect(fd, dst)
	if err == nil || errors.Is(err, unix.EINPROGRESS) {
		req := l.upgradeRequest(t, tg)
		n, werr := unix.Write(fd, req)
		switch {
		case errors.Is(werr, unix.EAGAIN):
			err = nil
		case werr == nil && n == len(req):
			err, written = nil, true
		case werr == nil:
			err = unix.EIO
		default:
			err = werr
		}
	}
	if err != nil {
		_ = unix.Close(fd)
		l.dialFailed(s, err)
		return
	}
	s.fd, s.state = int32(fd), stDialing
	if written {
		s.state, s.lastWrite = stUpgrade, e.now()
	}
	l.add(s)
	l.setTransport(s, t)
	ev := eventData(s.fd, s.slot)
	ev.Events = s.epollEvents()
	if err := unix.EpollCtl(l.ep, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		l.remove(s)
		_ = unix.Close(fd)
		s.fd, s.state = -1, stClosing
		l.dialFailed(s, err)
		return
	}
	e.sessions.Add(1)
}

// upgrade sends s's WebSocket upgrade request (through TLS on wss://) and waits for the
// response (stUpgrade).
func (l *loop) upgrade(s *session) {
	t := l.transportOf(s)
	s.state = stUpgrade
	l.setEvents(s)
	req := l.seal(t, l.upgradeRequest(t, &l.targets[s.spec.Broker%len(l.targets)]))
	s.lastWrite = l.e.now()
	l.watch(s)
	l.sendRaw(s, req)
}

// upgradeRequest returns the upgrade request for tg in l.out, its fresh key kept in t.buf
// for the response's check.
func (l *loop) upgradeRequest(t *transport, tg *target) []byte {
	var raw [16]byte
	_, _ = rand.Read(raw[:])
	t.buf = append(t.buf[:0], "012345678901234567890123"...)
	base64.StdEncoding.Encode(t.buf, raw[:])
	l.out = appendUpgradeRequest(l.out[:0], tg, t.buf)
	return l.out
}

// upgradeResponse takes what a read brought on s while it waits for the upgrade's response:
// once the head is whole and right, the bytes after it are WebSocket frames, and the CONNECT
// goes out. Until then the head so far waits in s.io.in.
func (l *loop) upgradeResponse(s *session, data []byte) {
	e := l.e
	t := l.transportOf(s)
	head := data
	pending := s.io != nil && len(s.io.in) > 0
	if pending {
		s.io.in = append(s.io.in, data...)
		head = s.io.in
	}
	tg := &l.targets[s.spec.Broker%len(l.targets)]
	if n := min(len(head), len(httpPrefix)); string(head[:n]) != httpPrefix[:n] { // known at its first bytes
		l.fail(s, CauseWebSocket, fmt.Sprintf("WebSocket upgrade: the reply %s is not HTTP (is port %d the broker's WebSocket listener?)",
			quoteHead(head), tg.port))
		return
	}
	i := bytes.Index(head, []byte("\r\n\r\n"))
	if i < 0 {
		if len(head) > 16<<10 {
			l.fail(s, CauseWebSocket, "WebSocket upgrade: the response's header is over 16 KiB")
			return
		}
		if !pending {
			if s.io == nil {
				s.io = &connIO{}
			}
			s.io.in = append(s.io.in[:0], data...)
		}
		return
	}
	if err := checkUpgrade(head[:i+2], t.buf, tg); err != nil {
		l.fail(s, CauseWebSocket, err.Error())
		return
	}
	took := time.Duration(e.now() - s.lastWrite)
	t.buf = nil // an idle connection keeps no buffer
	if o, ok := e.cfg.Observer.(HandshakeObserver); ok {
		o.Handshake(l.idx, int(s.client), Handshake{WebSocket: took})
	}
	var rest []byte
	if r := head[i+4:]; len(r) > 0 { // frames before the CONNECT: kept for the first read
		var lost bool
		if rest, lost = l.unframe(s, t, r); lost {
			return
		}
		if t.end != 0 {
			l.wsEnded(s, t)
			return
		}
	}
	if s.io != nil {
		s.io.in = s.io.in[:copy(s.io.in, rest)]
		l.release(s)
	} else if len(rest) > 0 {
		s.io = &connIO{in: append([]byte(nil), rest...)}
	}
	l.awaitConnack(s)
	l.setEvents(s)
	l.write(s, AppendConnect(l.out[:0], s.spec, s.maxIn))
}

// httpPrefix starts every HTTP/1.x response.
const httpPrefix = "HTTP/1."

// quoteHead quotes the first bytes of a reply (at most 64) for an error line.
func quoteHead(b []byte) string {
	if len(b) > 64 {
		return strconv.Quote(string(b[:64])) + "..."
	}
	return strconv.Quote(string(b))
}

// appendUpgradeRequest appends the HTTP/1.1 upgrade request for tg with key to dst.
func appendUpgradeRequest(dst []byte, tg *target, key []byte) []byte {
	b := dst
	b = append(b, "GET "...)
	b = append(b, tg.path...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	if strings.Contains(tg.host, ":") {
		b = append(append(append(b, '['), tg.host...), ']')
	} else {
		b = append(b, tg.host...)
	}
	if tg.port != defaultPorts[tg.scheme] {
		b = strconv.AppendInt(append(b, ':'), int64(tg.port), 10)
	}
	b = append(b, "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: "...)
	b = append(b, key...)
	return append(b, "\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: mqtt\r\n\r\n"...)
}

// checkUpgrade checks the upgrade response head (status line and header lines, each ending
// in CRLF) against the request's key, without allocating.
func checkUpgrade(head, key []byte, tg *target) error {
	line, head, _ := bytes.Cut(head, []byte("\r\n"))
	if !bytes.HasPrefix(line, []byte(httpPrefix)) || len(line) < 12 || line[8] != ' ' {
		return fmt.Errorf("WebSocket upgrade: the response %s is not HTTP/1.1", quoteHead(line))
	}
	if !bytes.HasPrefix(line[9:], []byte("101")) {
		return fmt.Errorf("WebSocket upgrade: GET %s answered %s, not 101 Switching Protocols (is %s the broker's WebSocket path?)",
			tg.path, quoteHead(line[9:]), tg.path)
	}
	var want [28]byte
	acceptKeyTo(want[:], key)
	var upgrade, connection, accept, protocol bool
	var gotAccept, gotProtocol []byte
	for len(head) > 0 {
		line, head, _ = bytes.Cut(head, []byte("\r\n"))
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Upgrade")):
			upgrade = upgrade || bytes.EqualFold(value, []byte("websocket"))
		case bytes.EqualFold(name, []byte("Connection")):
			connection = connection || hasToken(value, []byte("upgrade"))
		case bytes.EqualFold(name, []byte("Sec-WebSocket-Accept")):
			gotAccept, accept = value, bytes.Equal(value, want[:])
		case bytes.EqualFold(name, []byte("Sec-WebSocket-Protocol")):
			gotProtocol, protocol = value, bytes.Equal(value, []byte("mqtt"))
		}
	}
	switch {
	case !upgrade || !connection:
		return errors.New("WebSocket upgrade: the response lacks Upgrade: websocket and Connection: Upgrade")
	case !accept:
		return fmt.Errorf("WebSocket upgrade: Sec-WebSocket-Accept %q does not match the key sent", gotAccept)
	case !protocol:
		return fmt.Errorf("WebSocket upgrade: the broker chose subprotocol %q, not mqtt", gotProtocol)
	}
	return nil
}

// acceptKey is the Sec-WebSocket-Accept that answers key.
func acceptKey(key string) string {
	var b [28]byte
	acceptKeyTo(b[:], []byte(key))
	return string(b[:])
}

// acceptKeyTo writes the Sec-WebSocket-Accept of key (24 bytes) to dst (28 bytes).
func acceptKeyTo(dst, key []byte) {
	var in [24 + len(wsGUID)]byte
	copy(in[copy(in[:], key):], wsGUID)
	h := sha1.Sum(in[:len(key)+len(wsGUID)]) //nolint:gosec // the RFC's digest, no security from it
	base64.StdEncoding.Encode(dst, h[:])
}

// hasToken reports whether the comma-separated list v holds token (case-insensitive).
func hasToken(v, token []byte) bool {
	for len(v) > 0 {
		var f []byte
		f, v, _ = bytes.Cut(v, []byte(","))
		if bytes.EqualFold(bytes.TrimSpace(f), token) {
			return true
		}
	}
	return false
}
