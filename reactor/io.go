package reactor

import (
	"bytes"
	"errors"
	"fmt"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/mqblast/mqblast/codec"
)

// I/O: reading a socket into whole packets, writing to it, what waits for EPOLLOUT, and
// the end of a connection.

// arm makes the loop wake for s's traffic: EPOLLIN, and EPOLLOUT while bytes wait.
func (l *loop) arm(s *session) {
	s.flags &^= sfDeferred
	l.setEvents(s)
}

// setEvents tells epoll what s waits for now.
func (l *loop) setEvents(s *session) {
	ev := eventData(s.fd, s.slot)
	ev.Events = s.epollEvents()
	_ = unix.EpollCtl(l.ep, unix.EPOLL_CTL_MOD, int(s.fd), &ev)
}

// epollEvents returns what s waits for: the end of its TCP connect while dialing; then
// closes, its traffic unless its CONNACK is deferred, and room in the socket while bytes
// wait for it.
func (s *session) epollEvents() uint32 {
	if s.state == stDialing {
		return unix.EPOLLOUT | unix.EPOLLIN | unix.EPOLLRDHUP
	}
	ev := uint32(unix.EPOLLRDHUP)
	if s.flags&sfDeferred == 0 {
		ev |= unix.EPOLLIN
	}
	if s.flags&sfPollOut != 0 {
		ev |= unix.EPOLLOUT
	}
	return ev
}

// read takes what the socket has, handles every whole packet and keeps the rest.
func (l *loop) read(s *session) {
	var n int
	var err error
	for {
		n, err = l.recv(int(s.fd))
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if l.rxAt == 0 && n > 0 && s.state == stConnecting {
		l.noStamps = true // CONNACKs must then be read when they arrive
	}
	if errors.Is(err, unix.EAGAIN) {
		return
	}
	if n <= 0 {
		l.lost(s, err)
		return
	}
	data := l.rbuf[:n]
	if s.flags&sfTransport != 0 {
		if data = l.unwrap(s, data); data == nil {
			return
		}
		if s.state == stUpgrade {
			l.upgradeResponse(s, data)
			if l.recErr != nil {
				l.recordEnd(s)
			}
			return
		}
	}
	pending := s.io != nil && len(s.io.in) > 0
	if pending {
		s.io.in = append(s.io.in, data...)
		data = s.io.in
	}
	used := l.traffic(s, data)
	if l.recErr != nil { // the records ended in a bad one
		l.recordEnd(s)
		return
	}
	if s.state == stClosing {
		return
	}
	if s.flags&sfTransport != 0 && l.transportOf(s).end != 0 { // the broker's frames ended after data
		l.wsEnded(s, l.transportOf(s))
		return
	}
	rest := len(data) - used
	switch {
	case rest == 0 && pending:
		s.io.in = s.io.in[:0]
		l.release(s)
	case rest > 0 && pending:
		s.io.in = s.io.in[:copy(s.io.in, data[used:])]
	case rest > 0:
		if s.io == nil {
			s.io = &connIO{}
		}
		s.io.in = append(s.io.in[:0], data[used:]...)
	}
}

// recv reads what fd has into l.rbuf with recvmsg(2), and the arrival time of the last
// packet it took (SO_TIMESTAMPNS) into l.rxAt (0: none). The message header lives in
// the loop, so nothing is allocated.
func (l *loop) recv(fd int) (int, error) {
	m := &l.msg
	m.iov.Base = &l.rbuf[0]
	m.iov.SetLen(len(l.rbuf))
	m.hdr = unix.Msghdr{Iov: &m.iov, Control: &l.oob[0]}
	m.hdr.SetIovlen(1)
	m.hdr.SetControllen(len(l.oob))
	l.rxAt, l.rxArrival = 0, 0
	r, _, errno := unix.Syscall(unix.SYS_RECVMSG, uintptr(fd), uintptr(unsafe.Pointer(&m.hdr)), 0)
	if errno != 0 {
		return 0, errno
	}
	l.rxAt = rxStamp(l.oob[:m.hdr.Controllen])
	return int(r), nil
}

// arrival returns when the bytes being handled reached this host, as CLOCK_REALTIME ns:
// the kernel's stamp of the last packet the read took, or now if there is none or it is
// implausible (the clock was stepped). A loop busy elsewhere thus adds nothing to the
// latency of what waited in its sockets.
//
// It is worked out once per read (the packets of one read arrived together): a clock read
// per delivered message was about 100 of the ~1,200 instructions the client spent per
// message in BenchmarkClientReceive (callgrind).
func (l *loop) arrival() int64 {
	if l.rxArrival != 0 {
		return l.rxArrival
	}
	now := l.e.realEpoch + l.e.now()
	if l.rxAt > 0 && l.rxAt <= now && now-l.rxAt < int64(10*time.Second) {
		now = l.rxAt
	}
	l.rxArrival = now
	return now
}

// traffic handles the whole packets at the start of in and returns the bytes it used.
// The acknowledgements owed for them go out in one write.
func (l *loop) traffic(s *session, in []byte) int {
	used := 0
	for used < len(in) && s.state != stClosing {
		n, err := l.handle(s, in[used:])
		if err != nil {
			l.protocolError(s, packetError(err, in[used:]))
			break
		}
		if n == 0 {
			break
		}
		used += n
	}
	if len(l.reply) > 0 {
		if s.state != stClosing {
			l.send(s, l.reply)
		}
		l.reply = l.reply[:0]
	}
	return used
}

// release drops s's buffers once both are empty: an idle connection keeps none. A small
// buffer stays for the next partial packet.
func (l *loop) release(s *session) {
	if io := s.io; io != nil && len(io.in) == 0 && len(io.out) == 0 && cap(io.in)+cap(io.out) > 4096 {
		s.io = nil
	}
}

// write sends b, which was encoded into l.out, on s, and keeps l.out (grown or not) for
// the next packet.
func (l *loop) write(s *session, b []byte) {
	l.out = b[:0]
	l.send(s, b)
}

// send writes b on s at once; what the socket does not take waits in s.io.out for
// EPOLLOUT. It returns the bytes the kernel took now, or -1 when the connection was lost.
func (l *loop) send(s *session, b []byte) int {
	s.lastWrite = l.e.now()
	if s.state == stClosing {
		return -1
	}
	if len(b) == 0 {
		return 0
	}
	if s.flags&sfTransport != 0 {
		return l.sendWrapped(s, b)
	}
	return l.sendRaw(s, b)
}

// sendRaw writes b, bytes for the wire, on s; see send.
func (l *loop) sendRaw(s *session, b []byte) int {
	if s.io != nil && len(s.io.out) > 0 {
		s.io.out = append(s.io.out, b...)
		return 0
	}
	var n int
	var err error
	for {
		n, err = unix.Write(int(s.fd), b)
		if err != unix.EINTR {
			break
		}
	}
	if err == unix.EAGAIN {
		n, err = 0, nil
	}
	if err != nil {
		l.lost(s, err)
		return -1
	}
	if s.io != nil {
		s.io.pos += int64(n)
	}
	if n < len(b) {
		if s.io == nil {
			s.io = &connIO{pos: int64(n)}
		}
		s.io.out = append(s.io.out[:0], b[n:]...)
		l.pollOut(s, true)
	}
	return n
}

// flush writes what waits in s.io.out once the socket takes more.
func (l *loop) flush(s *session) {
	if s.io == nil || len(s.io.out) == 0 {
		l.pollOut(s, false)
		return
	}
	var n int
	var err error
	for {
		n, err = unix.Write(int(s.fd), s.io.out)
		if err != unix.EINTR {
			break
		}
	}
	if err == unix.EAGAIN {
		return
	}
	if err != nil {
		l.lost(s, err)
		return
	}
	rest := copy(s.io.out, s.io.out[n:])
	s.io.out = s.io.out[:rest]
	s.io.pos += int64(n)
	l.written(s, s.io.pos)
	if rest == 0 && s.state != stClosing {
		l.pollOut(s, false)
		l.release(s)
	}
}

// pollOut arms or disarms EPOLLOUT on s.
func (l *loop) pollOut(s *session, on bool) {
	if on == (s.flags&sfPollOut != 0) {
		return
	}
	if on {
		s.flags |= sfPollOut
	} else {
		s.flags &^= sfPollOut
	}
	l.setEvents(s)
}

// unsent returns the bytes waiting for s's socket.
func (s *session) unsent() int {
	if s.io == nil {
		return 0
	}
	return len(s.io.out)
}

// lost handles a socket that failed or that the broker closed (err nil: end of file).
func (l *loop) lost(s *session, err error) {
	e := l.e
	switch s.state {
	case stDialing, stConnecting, stUpgrade:
		cause, ex := CauseClosed, "connection closed before CONNACK"
		var t *transport
		if s.flags&sfTransport != 0 {
			t = l.transportOf(s)
		}
		switch {
		case err != nil:
			cause, ex = classify(err)
		case s.state == stConnecting && s.version == 5 && (t == nil || !t.certAsked):
			ex += ": the broker may not support MQTT 5.0 (it closed the 5.0 CONNECT without a CONNACK, as RabbitMQ 3.x does); " + hintV311
		}
		switch {
		case t != nil && t.certAsked: // the broker's TLS refused a client without a certificate
			cause = CauseTLS
			ex += " (after the TLS handshake, in which the broker asked for a client certificate and none was given: give --cert and --key, or --client-ca and --client-ca-key)"
		case t != nil && t.secure():
			ex += " (after the TLS handshake: a broker that requires a client certificate ends the connection here; give --cert and --key, or --client-ca and --client-ca-key)"
		}
		l.fail(s, cause, ex)
		return
	case stConnected:
		e.open.Add(-1)
		cause, ex := CauseClosed, "closed by the broker"
		if err != nil {
			cause, ex = classify(err)
		}
		if p := s.pub; cause == CauseClosed && s.version < 5 && p != nil && p.s == s && p.qos == 2 && p.flN > 0 {
			// 3.1.1 has no word for "QoS 2 not supported": such a broker closes the connection.
			e.cfg.Observer.Behaved(l.idx, int(s.client), BehaviourClosedQoS2, 2, 0, 1)
		}
		e.cfg.Observer.Dropped(l.idx, int(s.client), cause, ex)
		l.close(s)
		l.reconnect(s.client)
		return
	}
	l.close(s)
}

// fail ends a session that never got its CONNACK.
func (l *loop) fail(s *session, cause Cause, example string) {
	l.e.cfg.Observer.Failed(l.idx, int(s.client), int(s.attempt), cause, example)
	l.verdict(s)
	l.close(s)
	l.retry(s)
}

// close closes s's socket without reporting anything more about it.
func (l *loop) close(s *session) {
	if s.state == stClosing && s.fd < 0 {
		return
	}
	if s.flags&sfVerdict == 0 && s.state != stClosing {
		s.flags |= sfVerdict // no verdict will come: the engine is closing it
		l.connecting--
	}
	if s.state == stConnected && s.flags&sfPersistent != 0 && !l.e.closing.Load() {
		if l.away == nil {
			l.away = map[int32]int64{}
		}
		l.away[s.client] = l.e.now() // its session should outlive the connection
	}
	s.state = stClosing
	if s.flags&sfSubPending != 0 { // no SUBACK will come: the subscribe phase need not wait for it
		s.flags &^= sfSubPending
		l.e.subGone.Add(1)
	}
	l.detach(s)
	l.remove(s)
	if s.flags&sfHandshake != 0 {
		return // the handshake worker has the socket: handshaken closes it
	}
	if s.fd >= 0 {
		_ = unix.Close(int(s.fd)) // leaves the epoll set with it
		s.fd = -1
		l.e.sessions.Add(-1)
	}
	s.io = nil
}

func (l *loop) disconnectAll() {
	for _, s := range l.sessions {
		if s == nil {
			continue
		}
		if s.state == stConnected {
			l.write(s, codec.AppendDisconnect(l.out[:0], &codec.Disconnect{}, codec.Version(s.version)))
			l.wsCloseFrame(s)
			if s.state == stConnected {
				l.e.open.Add(-1)
			}
		}
		l.close(s)
	}
}

// protocolError ends s on a packet that broke a rule (err says which, verdictOf how it is
// reported). A 5.0 session tells the broker why with a DISCONNECT first (section 4.13); a
// frame that broke WebSocket's rules is answered with a close frame instead.
func (l *loop) protocolError(s *session, err error) {
	cause, code := verdictOf(err)
	var we *wsError
	if errors.As(err, &we) { // a close frame with its status instead (RFC 6455 section 7.1.7)
		status := [2]byte{byte(we.status >> 8), byte(we.status)}
		if !l.sendClose(s, l.transportOf(s), status[:]) {
			return
		}
	}
	switch s.state {
	case stConnecting, stUpgrade:
		l.fail(s, cause, err.Error())
	case stConnected:
		if we == nil && codec.Version(s.version) == codec.V5 {
			d := codec.Disconnect{Reason: code}
			if s.maxOut == 0 || codec.SizeDisconnect(&d, codec.V5) <= int(s.maxOut) { // [MQTT-3.2.2-15]
				l.write(s, codec.AppendDisconnect(l.out[:0], &d, codec.V5))
			}
		}
		if s.state != stConnected { // the write failed: lost has reported it
			return
		}
		l.e.open.Add(-1)
		l.e.cfg.Observer.Dropped(l.idx, int(s.client), cause, err.Error())
		l.close(s)
		l.reconnect(s.client)
	default:
		l.close(s)
	}
}

// httpReply is an HTTP response where an MQTT packet was due; err is the codec's error
// for its first bytes.
type httpReply struct {
	line string
	err  error
}

func (h *httpReply) Error() string {
	return "the broker answered in HTTP (" + h.line + "): this is an HTTP server, not an MQTT listener: " +
		"give the broker's MQTT port, or ws://HOST:PORT/mqtt for its WebSocket listener"
}

func (h *httpReply) Unwrap() error { return h.err }

// hintV311 ends the example of a 5.0 CONNECT that a broker did not answer.
const hintV311 = "run at 3.1.1 (protocol_version 4, -V 4)"

// packetError adds to err, an error of handling the packet at the start of in, the
// packet's type and its first bytes, which say what the broker sent: "codec: reason code
// not valid for this packet (PUBREC: 50 03 00 07 92)". It wraps err. Bytes that start an
// HTTP response say so instead: the port is an HTTP server's (a WebSocket listener's).
func packetError(err error, in []byte) error {
	var ce *codec.Error
	if !errors.As(err, &ce) || len(in) == 0 {
		return err
	}
	if bytes.HasPrefix(in, []byte(httpPrefix)) {
		line, _, _ := bytes.Cut(in[:min(len(in), 64)], []byte("\r\n"))
		return &httpReply{line: quoteHead(line), err: err}
	}
	h := codec.PacketType(in[0] >> 4)
	return fmt.Errorf("%w (%v: % x)", err, h, in[:min(len(in), 12)])
}
