package sink

import (
	"bytes"
	"crypto/sha1" //nolint:gosec // RFC 6455 defines Sec-WebSocket-Accept with SHA-1
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/panjf2000/gnet/v2"
)

// MQTT over WebSocket (RFC 6455, MQTT 5.0 section 6), the server's side: the HTTP/1.1
// upgrade request answered (101, subprotocol "mqtt" echoed when offered) or refused with an
// HTTP error and closed; then the client's masked frames unmasked into the MQTT byte stream
// (a packet may span frames, a frame hold several packets), pings answered with pongs and a
// close frame with a close frame; the sink's MQTT bytes go out in one unmasked binary frame
// per write.

// DefaultWSPath is the path the sink's WebSocket upgrade is served on, as the client's
// default (ws://host:port is ws://host:port/mqtt).
const DefaultWSPath = "/mqtt"

// WebSocket opcodes.
const (
	wsContinuation = 0x0
	wsText         = 0x1
	wsBinary       = 0x2
	wsClose        = 0x8
	wsPing         = 0x9
	wsPong         = 0xA
)

// WebSocket status codes of the sink's close frames (RFC 6455 section 7.4.1).
const (
	wsStatusNormal      = 1000
	wsStatusProtocol    = 1002
	wsStatusUnsupported = 1003
	wsStatusTooBig      = 1009
)

// maxUpgradeRequest bounds the upgrade request's head: a client sending more without its
// end is answered 431 and closed.
const maxUpgradeRequest = 8 << 10

// wsGUID is RFC 6455's key suffix for Sec-WebSocket-Accept.
const wsGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// wsState is a WebSocket connection's state beside its session.
type wsState struct {
	cut    []byte // the MQTT bytes of a packet not yet whole
	rem    uint64 // payload bytes of the current data frame still to come
	key    uint32 // its masking key, rotated to the next payload byte
	open   bool   // upgraded: the bytes are frames
	status uint16 // the status code of the close frame to send, once closing
	inData bool   // a data frame's payload is under way (rem may be 0 for an empty one)
	frag   bool   // a fragmented data message is under way (its last frame not yet seen)
	closed bool   // closing: a close frame goes out after what is pending, then nothing
	sent   bool   // the close frame went out
}

// wsStream takes what s's socket (or TLS layer) brought: the upgrade request while it is
// not upgraded, then frames whose payloads are MQTT packets, handled as over TCP. It
// returns the bytes of in it has taken; the rest (a cut upgrade request, frame header or
// control frame, at most maxUpgradeRequest or 139 bytes) is given again with more. What the
// handling answers is in h.out (MQTT, to be framed) and h.ctl (already on the wire's terms:
// the upgrade's response, pongs, a close frame).
func (h *handler) wsStream(s *session, in []byte) (used int, act gnet.Action) {
	w := s.ws
	if !w.open {
		used, act = h.upgrade(s, in)
		if act != gnet.None || !w.open {
			return used, act
		}
	}
	// The payloads go to the loop's buffer, or after a cut packet's, which so grows in place.
	inCut := len(w.cut) > 0
	dst := h.wsPlain[:0]
	if inCut {
		dst = w.cut
	}
	n, dst, status, peer := h.unframe(w, dst, in[used:])
	used += n
	mused, act := h.packets(s, dst)
	w.cut = keepCut(dst, mused, inCut, act)
	if !inCut {
		h.wsPlain = dst[:0] // keep what it grew to
	}
	if status != 0 && act == gnet.None {
		if !peer {
			h.c.wsProtocolErrors.Add(1)
		}
		h.wsClose(w, status)
		act = gnet.Close
	}
	return used, act
}

// unframe appends the unmasked payloads of the data frames at the start of in to dst and
// returns the bytes of in taken. A data frame's payload is taken as far as it came; a
// header, or a control frame, only when whole. A ping is answered (h.ctl); a close frame,
// or a frame the client may not send, ends the frames: status is the close frame's status
// code to answer with (peer: the client's own close, its status echoed), 0 while they go on.
func (h *handler) unframe(w *wsState, dst, in []byte) (used int, out []byte, status uint16, peer bool) {
	for used < len(in) || (w.inData && w.rem == 0) {
		if w.inData {
			k := int(min(w.rem, uint64(len(in)-used)))
			i := len(dst)
			dst = append(dst, in[used:used+k]...)
			w.key = unmask(dst[i:], w.key)
			used += k
			if w.rem -= uint64(k); w.rem > 0 {
				return used, dst, 0, false
			}
			w.inData = false
			continue
		}
		b := in[used:]
		if len(b) < 2 {
			return used, dst, 0, false
		}
		b0, b1 := b[0], b[1]
		op, fin := b0&0x0f, b0&0x80 != 0
		hlen, plen := 2, uint64(b1&0x7f)
		switch plen {
		case 126:
			hlen = 4
		case 127:
			hlen = 10
		}
		switch {
		case b1&0x80 == 0: // a client masks every frame (RFC 6455 section 5.1)
			return used, dst, wsStatusProtocol, false
		case b0&0x70 != 0: // no extension was agreed
			return used, dst, wsStatusProtocol, false
		case op == wsText: // [MQTT-6.0.0-1]
			return used, dst, wsStatusUnsupported, false
		case op == wsContinuation && !w.frag, op == wsBinary && w.frag:
			return used, dst, wsStatusProtocol, false
		case op > wsPong || (op > wsBinary && op < wsClose):
			return used, dst, wsStatusProtocol, false
		case op >= wsClose && (!fin || plen > 125):
			return used, dst, wsStatusProtocol, false
		}
		if len(b) < hlen+4 {
			return used, dst, 0, false
		}
		switch plen {
		case 126:
			plen = uint64(binary.BigEndian.Uint16(b[2:]))
		case 127:
			plen = binary.BigEndian.Uint64(b[2:])
		}
		key := binary.LittleEndian.Uint32(b[hlen:])
		hlen += 4
		if op < wsClose {
			// A frame over the largest packet the sink takes (or what MaxHeld could hold)
			// carries nothing it could use.
			if plen > uint64(h.cfg.MaxHeld) {
				return used, dst, wsStatusTooBig, false
			}
			w.frag = !fin
			w.inData, w.rem, w.key = true, plen, key
			used += hlen
			continue
		}
		if len(b) < hlen+int(plen) {
			return used, dst, 0, false
		}
		p := b[hlen : hlen+int(plen)]
		var ctl [125]byte
		copy(ctl[:], p) // in may be gnet's buffer: unmasked in a copy
		unmask(ctl[:plen], key)
		used += hlen + int(plen)
		switch op {
		case wsPing:
			h.ctl = appendWSFrame(h.ctl, wsPong, ctl[:plen])
			h.c.wsPings.Add(1)
		case wsClose:
			h.c.wsCloseFrames.Add(1)
			switch plen {
			case 0:
				return used, dst, wsStatusNormal, true
			case 1:
				return used, dst, wsStatusProtocol, false
			}
			if st := binary.BigEndian.Uint16(ctl[:2]); sendableStatus(st) {
				return used, dst, st, true // echoed (RFC 6455 section 5.5.1)
			}
			return used, dst, wsStatusProtocol, false
		}
	}
	return used, dst, 0, false
}

// sendableStatus reports whether a close frame may carry status (RFC 6455 section 7.4):
// 1000-1003 and 1007-1014 defined, 3000-4999 registered or private; 1004-1006 and 1015 are
// reserved, the rest undefined.
func sendableStatus(st uint16) bool {
	return (st >= 1000 && st <= 1003) || (st >= 1007 && st <= 1014) || (st >= 3000 && st <= 4999)
}

// wsClose has a close frame with status sent after what is pending (wsWire), unless one is
// under way already.
func (h *handler) wsClose(w *wsState, status uint16) {
	if !w.closed {
		w.closed, w.status = true, status
	}
}

// unmask XORs b with the masking key (its bytes in little-endian order are the key's octets
// in wire order), eight bytes at a time, and returns the key rotated to the byte after b.
func unmask(b []byte, key uint32) uint32 {
	n := len(b)
	k := uint64(key) | uint64(key)<<32
	for len(b) >= 8 {
		binary.LittleEndian.PutUint64(b, binary.LittleEndian.Uint64(b)^k)
		b = b[8:]
	}
	for i := range b {
		b[i] ^= byte(key >> (8 * (i & 3)))
	}
	r := uint(n&3) * 8
	return key>>r | key<<(32-r)
}

// appendWSFrame appends one final, unmasked frame of opcode op with payload p.
func appendWSFrame(dst []byte, op byte, p []byte) []byte {
	dst = appendWSHeader(dst, op, len(p))
	return append(dst, p...)
}

// appendWSHeader appends a final, unmasked frame header of opcode op for n payload bytes.
func appendWSHeader(dst []byte, op byte, n int) []byte {
	switch {
	case n < 126:
		return append(dst, 0x80|op, byte(n))
	case n < 1<<16:
		return append(dst, 0x80|op, 126, byte(n>>8), byte(n))
	}
	dst = append(dst, 0x80|op, 127)
	return binary.BigEndian.AppendUint64(dst, uint64(n))
}

// wsWire returns what goes on the wire for this read of s: the control bytes (h.ctl: the
// upgrade's response, pongs), the MQTT bytes out (h.out) in one binary frame, and the close
// frame when closing; h.ctl and h.out are emptied. Nothing goes after a close frame.
func (h *handler) wsWire(s *session) []byte {
	w := s.ws
	b := h.wire[:0]
	if !w.sent {
		b = append(b, h.ctl...)
		if len(h.out) > 0 {
			b = appendWSHeader(b, wsBinary, len(h.out))
			b = append(b, h.out...)
		}
		if w.closed && w.open {
			var p [2]byte
			binary.BigEndian.PutUint16(p[:], w.status)
			b = appendWSFrame(b, wsClose, p[:])
			w.sent = true
		}
	}
	h.ctl, h.out = h.ctl[:0], h.out[:0]
	h.wire = b
	return b
}

// wsFrame returns p in one binary frame, in the loop's wire buffer.
func (h *handler) wsFrame(p []byte) []byte {
	h.wire = append(appendWSHeader(h.wire[:0], wsBinary, len(p)), p...)
	return h.wire
}

// wsTraffic is OnTraffic for a WebSocket connection over TCP.
func (h *handler) wsTraffic(c gnet.Conn, s *session) gnet.Action {
	in, _ := c.Peek(-1)
	h.published = false
	used, act := h.wsStream(s, in)
	if used > 0 {
		_, _ = c.Discard(used)
		h.c.bytesIn.Add(uint64(used))
	}
	h.hold(s, len(in)-used+len(s.ws.cut))
	if act == gnet.None && s.held > 0 && h.held > h.cfg.MaxHeld {
		h.c.heldOver.Add(1)
		act = h.fail(s, errHeldOver)
	}
	if len(h.out)+len(h.ctl) > 0 || s.ws.closed {
		b := h.wsWire(s)
		_, _ = c.Write(b)
		h.c.bytesOut.Add(uint64(len(b)))
	}
	if len(h.dirty) > 0 {
		h.schedule()
	}
	return act
}

// upgrade reads the upgrade request at the start of in: once its head is whole, the
// response (101, or an HTTP error and the connection closed) goes to h.ctl and the bytes of
// the head are taken.
func (h *handler) upgrade(s *session, in []byte) (int, gnet.Action) {
	end := bytes.Index(in, []byte("\r\n\r\n"))
	if end < 0 {
		if len(in) > maxUpgradeRequest {
			h.refuseUpgrade("431 Request Header Fields Too Large", "")
			return len(in), gnet.Close
		}
		return 0, gnet.None
	}
	status, accept, proto := h.checkUpgrade(in[:end+2])
	if status != "" {
		extra := ""
		switch status[:3] {
		case "426":
			extra = "Sec-WebSocket-Version: 13\r\n"
		case "405":
			extra = "Allow: GET\r\n"
		}
		h.refuseUpgrade(status, extra)
		return end + 4, gnet.Close
	}
	h.ctl = append(h.ctl, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: "...)
	h.ctl = append(h.ctl, accept[:]...)
	if proto {
		h.ctl = append(h.ctl, "\r\nSec-WebSocket-Protocol: mqtt"...)
	}
	h.ctl = append(h.ctl, "\r\n\r\n"...)
	s.ws.open = true
	h.c.wsUpgrades.Add(1)
	return end + 4, gnet.None
}

// refuseUpgrade answers a bad upgrade request with status (and the header lines extra).
func (h *handler) refuseUpgrade(status, extra string) {
	h.c.wsRefused.Add(1)
	h.ctl = append(h.ctl, "HTTP/1.1 "...)
	h.ctl = append(h.ctl, status...)
	h.ctl = append(h.ctl, "\r\nConnection: close\r\nContent-Length: 0\r\n"...)
	h.ctl = append(h.ctl, extra...)
	h.ctl = append(h.ctl, "\r\n"...)
}

// checkUpgrade checks an upgrade request's head (request line and header lines, each ending
// in CRLF) against RFC 6455 section 4.2.1: a GET of the sink's path in HTTP/1.1 with a Host,
// Upgrade: websocket, Connection: Upgrade, a Sec-WebSocket-Key of 16 bytes and
// Sec-WebSocket-Version 13. It returns the HTTP status to refuse it with ("" when it is
// good), the Sec-WebSocket-Accept and whether the client offered subprotocol "mqtt".
func (h *handler) checkUpgrade(head []byte) (status string, accept [28]byte, mqtt bool) {
	line, head, _ := bytes.Cut(head, []byte("\r\n"))
	method, line, _ := bytes.Cut(line, []byte(" "))
	target, version, _ := bytes.Cut(line, []byte(" "))
	if string(version) != "HTTP/1.1" || len(target) == 0 {
		return "400 Bad Request", accept, false
	}
	if string(method) != "GET" {
		return "405 Method Not Allowed", accept, false
	}
	path, _, _ := bytes.Cut(target, []byte("?"))
	var host, upgrade, connection, wsVersion bool
	var key []byte
	for len(head) > 0 {
		var l []byte
		l, head, _ = bytes.Cut(head, []byte("\r\n"))
		name, value, ok := bytes.Cut(l, []byte(":"))
		if !ok {
			return "400 Bad Request", accept, false
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Host")):
			host = true
		case bytes.EqualFold(name, []byte("Upgrade")):
			upgrade = upgrade || hasToken(value, "websocket")
		case bytes.EqualFold(name, []byte("Connection")):
			connection = connection || hasToken(value, "upgrade")
		case bytes.EqualFold(name, []byte("Sec-WebSocket-Key")):
			key = value
		case bytes.EqualFold(name, []byte("Sec-WebSocket-Version")):
			wsVersion = string(value) == "13"
			if !wsVersion {
				return "426 Upgrade Required", accept, false
			}
		case bytes.EqualFold(name, []byte("Sec-WebSocket-Protocol")):
			mqtt = mqtt || hasToken(value, "mqtt")
		}
	}
	var raw [18]byte // a key of 24 characters decodes to 16 bytes (18 before its padding is seen)
	if len(key) != 24 {
		return "400 Bad Request", accept, false
	}
	if n, err := base64.StdEncoding.Decode(raw[:], key); err != nil || n != 16 {
		return "400 Bad Request", accept, false
	}
	switch {
	case !host || !upgrade || !connection:
		return "400 Bad Request", accept, false
	case !wsVersion:
		return "426 Upgrade Required", accept, false
	case string(path) != h.cfg.WSPath:
		return "404 Not Found", accept, false
	}
	sum := sha1.Sum(append(append(make([]byte, 0, 24+len(wsGUID)), key...), wsGUID...)) //nolint:gosec // RFC 6455
	base64.StdEncoding.Encode(accept[:], sum[:])
	return "", accept, mqtt
}

// hasToken reports whether the comma-separated list v holds token, case-insensitively.
func hasToken(v []byte, token string) bool {
	for len(v) > 0 {
		var t []byte
		t, v, _ = bytes.Cut(v, []byte(","))
		if bytes.EqualFold(bytes.TrimSpace(t), []byte(token)) {
			return true
		}
	}
	return false
}

// overWS says how a WebSocket sink speaks, for its ready line.
func overWS(cfg Config) string {
	path := strconv.Quote(cfg.WSPath)
	switch {
	case cfg.TLS == nil:
		return " over WebSocket (ws, path " + path + ")"
	case cfg.TLS.ClientCAs != nil:
		return " over WebSocket and TLS 1.3 (wss, path " + path + ", client certificates required)"
	}
	return " over WebSocket and TLS 1.3 (wss, path " + path + ")"
}

// CheckWSPath checks --ws-path: an absolute path without a query, spaces or control
// characters; given without --ws, it is a mistake.
func CheckWSPath(ws bool, path string) error {
	switch {
	case path == "" || path == DefaultWSPath:
		return nil
	case !ws:
		return fmt.Errorf("--ws-path %s: the sink serves it only over WebSocket; add --ws, or leave it out", path)
	case path[0] != '/' || strings.ContainsAny(path, "?# ") || strings.ContainsFunc(path, unicode.IsControl):
		return fmt.Errorf("--ws-path %q: want an absolute path without a query, e.g. /mqtt", path)
	}
	return nil
}
