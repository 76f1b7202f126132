package reactor

import (
	"bytes"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/mqblast/mqblast/internal/tlsrec"
)

// The loop's TLS record layer: a TLS 1.3 connection's records sealed and opened by its loop
// (internal/tlsrec) once crypto/tls has done the handshake, and the cipher state of idle
// connections dropped.

// Record layers, as the result names them (Handshake.RecordLayer).
const (
	RecordLayerLoop    = "loop"     // the loop seals and opens the records (internal/tlsrec)
	RecordLayerTLSConn = "tls.Conn" // crypto/tls's tls.Conn does
)

// coldAfter is how often a loop sweeps its connections with a built cipher state: one that
// sealed and opened nothing between two sweeps drops it (tlsrec.Conn.Release), so that an
// idle connection keeps only its keys and sequence numbers, and rebuilds it with its next
// record. A connection idle for coldAfter to twice that is released; one busy more often
// than once per coldAfter never is.
const coldAfter = time.Second

// touch notes that t's record layer is about to seal or open: its cipher state is (re)built
// and it joins the loop's sweep.
func (l *loop) touch(r *secured) {
	r.used = true
	if !r.warm {
		r.warm = true
		l.warm = append(l.warm, r)
	}
}

// sweep releases the cipher state of the transports in l.warm that sealed and opened
// nothing since the last sweep, and the buffer of a record no longer cut.
func (l *loop) sweep(now int64) {
	if now < l.lastSweep+int64(coldAfter) {
		return
	}
	l.lastSweep = now
	kept := l.warm[:0]
	for _, r := range l.warm {
		if r.used {
			r.used = false
			kept = append(kept, r)
			continue
		}
		r.cool()
	}
	clear(l.warm[len(kept):])
	l.warm = kept
}

// cool drops r's cipher state, and its buffer of a cut record unless one is cut.
func (r *secured) cool() {
	r.warm, r.used = false, false
	r.rec.Release()
	if len(r.part) == 0 {
		r.part = nil
	}
}

// ReleaseIdle drops the cipher state of every connection on the loop's TLS record layer
// at once, as the loops' sweep does for a connection idle past coldAfter; the next
// record rebuilds it. A caller that reads the resident set of connections it holds idle
// calls it first, so that it need not wait for the sweep.
func (e *Engine) ReleaseIdle() {
	e.OnLoops(func(i int) {
		l := e.loops[i]
		for _, r := range l.warm {
			r.cool()
		}
		clear(l.warm)
		l.warm = l.warm[:0]
	})
}

// open turns the ciphertext a read brought on s (data, in l.rbuf) into plaintext (in
// l.plain): the records kept in t.part first (those the handshake's reads took past its
// end, a record an earlier read cut, completed), then data's; a record cut by this read is
// kept in t.part. Records the Conn owes the broker (a KeyUpdate's answer) go
// out at once. ok is false when the connection ended (reported). A record the Conn refuses
// ends the connection once the plaintext before it is handled: its error waits in
// l.recErr for recordEnd.
func (l *loop) open(s *session, t *secured, data []byte) (plain []byte, ok bool) {
	if t.tls != nil { // the handshake's tls.Conn reads along, for a session ticket
		l.tickets(s, t, data)
	}
	l.touch(t)
	plain = l.plain[:0]
	var err error
	for len(t.part) > 0 && err == nil { // the records kept first: whole ones, then the cut one completed
		var n int
		if plain, n, err = t.rec.Open(plain, t.part); err != nil {
			break
		}
		t.part = t.part[:copy(t.part, t.part[n:])]
		k := recordNeeds(t.part, len(data))
		if len(t.part) == 0 || k == 0 {
			break
		}
		t.part = append(t.part, data[:k]...)
		data = data[k:]
	}
	if err == nil && len(data) > 0 {
		var n int
		if plain, n, err = t.rec.Open(plain, data); err == nil && n < len(data) {
			t.part = append(t.part, data[n:]...)
		}
	}
	l.plain = plain[:0]
	if t.tls != nil && l.e.tlsSess == nil && t.rec.Stats().Tickets > 0 {
		t.tls = nil // it read the records t.rec opened, a ticket among them: its cache has it
	}
	if err != nil { // what came before the bad record is handled first (a CONNACK, messages)
		t.part = nil
		l.recErr = err
		return plain, true
	}
	if l.wire = t.rec.Pending(l.wire[:0]); len(l.wire) > 0 {
		if l.sendRaw(s, l.wire) < 0 {
			return nil, false
		}
	}
	return plain, true
}

// recordNeeds returns how many of the next have bytes complete the cut record part (its
// header first; part holds less than a record), at most have.
func recordNeeds(part []byte, have int) int {
	if len(part) < 5 {
		return min(5-len(part), have)
	}
	return min(5+(int(part[3])<<8|int(part[4]))-len(part), have)
}

// tickets hands the ciphertext of a read of s to the handshake's tls.Conn too, which reads
// the same records as t.rec and keeps the session tickets among them (in the client's
// session cache, for its reconnects); what it decrypts is not used, and an error of its
// own only ends its part. Once it has kept one ticket it is let go: a broker sends its
// tickets first, and a reconnect resumes with one, so it does not decrypt the upgrade's
// response or the CONNACK a second time. (With a cache of the configuration's, whose
// entries the loop cannot see, open lets it go once t.rec has counted a ticket.)
func (l *loop) tickets(s *session, t *secured, data []byte) {
	kept := l.e.tlsSess.session(int(s.client))
	wc := t.tls.NetConn().(*wireConn)
	wc.in, wc.out = data, nil // what it would write (an alert) is not sent: t.rec answers for the connection
	if cap(l.plain) < 16<<10 {
		l.plain = make([]byte, 0, 64<<10)
	}
	buf := l.plain[:cap(l.plain)]
	for {
		_, err := t.tls.Read(buf)
		if errors.Is(err, errWouldBlock) {
			break
		}
		if err != nil {
			t.tls = nil
			break
		}
	}
	wc.in = nil
	if l.e.tlsSess != nil && l.e.tlsSess.session(int(s.client)) != kept {
		t.tls = nil
	}
}

// dropHandshake lets go of the handshake's tls.Conn of s once its CONNACK is in: the loop's
// record layer goes on alone.
func (l *loop) dropHandshake(s *session) {
	if s.flags&sfTransport == 0 {
		return
	}
	if r := l.transportOf(s).sec; r != nil && r.rec != nil {
		r.tls = nil
	}
}

// recordEnd ends s, whose read's records ended in l.recErr, once what came before it is
// handled (unless that ended s already).
func (l *loop) recordEnd(s *session) {
	err := l.recErr
	l.recErr = nil
	if s.state != stClosing {
		l.recordFailed(s, err)
	}
}

// recordFailed ends s on the record layer's error: the broker's close_notify as the broker
// closing, its alert as crypto/tls reports one (tls_error), anything else by its reason.
func (l *loop) recordFailed(s *session, err error) {
	var re *tlsrec.Error
	switch {
	case !errors.As(err, &re):
		l.lost(s, tlsError(err))
	case re.Reason == tlsrec.ReasonClosed:
		l.lost(s, nil)
	case re.Reason == tlsrec.ReasonAlert:
		l.lost(s, tlsError(&net.OpError{Op: "remote error", Err: alertError(re.Alert)}))
	default:
		l.lost(s, &recordError{re})
	}
}

// alertError is a TLS alert as crypto/tls words it ("tls: bad certificate").
type alertError string

func (a alertError) Error() string { return "tls: " + string(a) }

// recordError is a record the loop's record layer refused: a Cause of its own by reason.
type recordError struct{ e *tlsrec.Error }

func (r *recordError) Error() string { return "TLS record layer: " + r.e.Error() }
func (r *recordError) Unwrap() error { return r.e }

// cause is the Cause of r's reason.
func (r *recordError) cause() Cause {
	switch r.e.Reason {
	case tlsrec.ReasonOverflow:
		return CauseTLSRecordOverflow
	case tlsrec.ReasonBadMAC:
		return CauseTLSBadRecordMAC
	case tlsrec.ReasonUnexpected:
		return CauseTLSUnexpectedMessage
	case tlsrec.ReasonDecode:
		return CauseTLSDecodeError
	case tlsrec.ReasonKeyUpdateStorm:
		return CauseTLSKeyUpdateStorm
	}
	return CauseTLS
}

// keyLog is a connection's crypto/tls KeyLogWriter during its handshake: it keeps the two
// TLS 1.3 application traffic secrets, in the handshake job's memory only, and nothing
// else; the job zeroes them once the record layer has copied them.
type keyLog struct {
	client, server []byte
}

// Write takes one line of the NSS key log format, "LABEL CLIENT_RANDOM SECRET\n", both in
// hex. crypto/tls builds the line for this call alone and drops it after: its secret's
// digits are zeroed here, so that no copy of the secret outlives the handshake's garbage.
func (k *keyLog) Write(line []byte) (int, error) {
	label, rest, _ := bytes.Cut(line, []byte(" "))
	var dst *[]byte
	switch string(label) {
	case "CLIENT_TRAFFIC_SECRET_0":
		dst = &k.client
	case "SERVER_TRAFFIC_SECRET_0":
		dst = &k.server
	}
	_, secret, _ := bytes.Cut(rest, []byte(" "))
	secret = bytes.TrimRight(secret, "\n")
	if dst != nil {
		b := make([]byte, hex.DecodedLen(len(secret)))
		if n, err := hex.Decode(b, secret); err == nil {
			*dst = b[:n]
		}
	}
	clear(secret)
	return len(line), nil
}

// zero overwrites the secrets.
func (k *keyLog) zero() {
	clear(k.client)
	clear(k.server)
	k.client, k.server = nil, nil
}

// sessionSlots is the engine's own TLS session cache, when the configuration brings none:
// each client's last session in a slice by client, where an LRU cache keeps a list element,
// a map entry and a key string besides (some 150 bytes per idle connection).
type sessionSlots struct {
	mu sync.Mutex
	s  []sessionSlot
}

type sessionSlot struct {
	key string // crypto/tls's cache key: the server name or address
	cs  *tls.ClientSessionState
}

// session returns client's session in c (nil: none, or c is nil).
func (c *sessionSlots) session(client int) *tls.ClientSessionState {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if client < len(c.s) {
		return c.s[client].cs
	}
	return nil
}

// clientSlot is one client's view of the cache: its own session, never another client's.
type clientSlot struct {
	c      *sessionSlots
	client int
}

func (k clientSlot) Get(key string) (*tls.ClientSessionState, bool) {
	k.c.mu.Lock()
	defer k.c.mu.Unlock()
	if k.client < len(k.c.s) {
		if e := k.c.s[k.client]; e.cs != nil && e.key == key {
			return e.cs, true
		}
	}
	return nil, false
}

func (k clientSlot) Put(key string, cs *tls.ClientSessionState) {
	k.c.mu.Lock()
	defer k.c.mu.Unlock()
	if k.client >= len(k.c.s) {
		return
	}
	e := &k.c.s[k.client]
	switch {
	case cs == nil: // crypto/tls forgets a session that did not resume
		if e.key == key {
			*e = sessionSlot{}
		}
	case e.key == key:
		e.cs = cs // the key string kept is the one stored first
	default:
		*e = sessionSlot{key: key, cs: cs}
	}
}
