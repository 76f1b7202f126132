package reactor

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mqblast/mqblast/internal/tlsrec"
)

// Transports: what TLS and WebSocket add to a connection. Plain TCP has none: its session
// carries no transport and pays one flag test (sfTransport) per read and write. A session
// with a transport has it in loop.tr at its slot.
//
// The TLS handshake blocks (crypto/tls wants a blocking net.Conn), so the TCP connect and
// the handshake of a TLS connection run on a bounded pool of goroutines
// (Config.HandshakeWorkers), off the loop and out of its epoll set; the socket then comes
// back to its loop, which drives the established connection itself. A TLS 1.3 connection
// with a suite internal/tlsrec runs takes the loop's record layer: the handshake's key log
// gave the job the two application traffic secrets, the handshake read no byte past its
// last record, and the loop seals and opens the records itself (a tlsrec.Conn) from then
// on; the tls.Conn reads along only until it has kept a session ticket (a broker sends
// them first; at the latest until the CONNACK), and is then dropped with its configuration. Any other connection (TLS 1.2,
// another suite, Config.TLSRecordLayer "tls.Conn") keeps its tls.Conn: ciphertext read from
// the socket is handed to it from memory (wireConn), and what it writes is collected in
// memory for the loop's own write. The WebSocket upgrade is the loop's, like the CONNECT:
// a request written, a response read (ws.go).

// Broker schemes.
const (
	schemeTCP uint8 = iota // host:port, mqtt://
	schemeTLS              // mqtts://
	schemeWS               // ws://
	schemeWSS              // wss://
)

// target is one broker of Config.Brokers: where it is and how to talk to it.
type target struct {
	ap     netip.AddrPort
	scheme uint8
	host   string // the host as given: the TLS server name, the WebSocket Host header's
	port   int
	path   string // the WebSocket request path
}

func (t *target) tls() bool { return t.scheme == schemeTLS || t.scheme == schemeWSS }
func (t *target) ws() bool  { return t.scheme == schemeWS || t.scheme == schemeWSS }

// Default ports by scheme (EMQX's for WebSocket: MQTT over WebSocket has no registered one).
var defaultPorts = [...]int{schemeTCP: 1883, schemeTLS: 8883, schemeWS: 8083, schemeWSS: 8084}

// ParseBroker checks a broker address: "host:port", or a URL "mqtt://host[:port]",
// "mqtts://host[:port]" (TLS), "ws://host[:port][/path]" or "wss://host[:port][/path]"
// (MQTT over WebSocket, path /mqtt by default). It returns the scheme ("mqtt", "mqtts",
// "ws" or "wss"), host, port and path (empty but for WebSocket).
func ParseBroker(s string) (scheme, host string, port int, path string, err error) {
	t, err := parseTarget(s)
	if err != nil {
		return "", "", 0, "", err
	}
	return [...]string{"mqtt", "mqtts", "ws", "wss"}[t.scheme], t.host, t.port, t.path, nil
}

// parseTarget parses a broker address (see ParseBroker) without resolving it.
func parseTarget(s string) (target, error) {
	var t target
	i := strings.Index(s, "://")
	if i < 0 {
		host, port, err := net.SplitHostPort(s)
		if err != nil {
			return t, fmt.Errorf("broker address %q: want host:port or a URL (mqtt://, mqtts://, ws://, wss://): %w", s, err)
		}
		t.host = host
		t.port, err = strconv.Atoi(port)
		if err != nil || t.port <= 0 || t.port > 65535 {
			return t, fmt.Errorf("broker address %q: port %q is not a number 1..65535", s, port)
		}
		return t, nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return t, fmt.Errorf("broker address %q: %w", s, err)
	}
	switch strings.ToLower(u.Scheme) {
	case "mqtt", "tcp":
		t.scheme = schemeTCP
	case "mqtts", "ssl", "tls":
		t.scheme = schemeTLS
	case "ws":
		t.scheme = schemeWS
	case "wss":
		t.scheme = schemeWSS
	default:
		return t, fmt.Errorf("broker address %q: scheme %q: want mqtt, mqtts, ws or wss", s, u.Scheme)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return t, fmt.Errorf("broker address %q: a user, query or fragment is not taken (give --username/--password)", s)
	}
	t.host = u.Hostname()
	if t.host == "" {
		return t, fmt.Errorf("broker address %q: no host", s)
	}
	t.port = defaultPorts[t.scheme]
	if p := u.Port(); p != "" {
		t.port, err = strconv.Atoi(p)
		if err != nil || t.port <= 0 || t.port > 65535 {
			return t, fmt.Errorf("broker address %q: port %q is not a number 1..65535", s, p)
		}
	}
	if t.ws() {
		t.path = u.EscapedPath()
		if t.path == "" {
			t.path = "/mqtt"
		}
	} else if u.Path != "" && u.Path != "/" {
		return t, fmt.Errorf("broker address %q: a path is only for ws:// and wss://", s)
	}
	return t, nil
}

// resolveTarget parses and resolves a broker address.
func resolveTarget(s string) (target, error) {
	t, err := parseTarget(s)
	if err != nil {
		return t, err
	}
	hp := net.JoinHostPort(t.host, strconv.Itoa(t.port))
	if t.ap, err = netip.ParseAddrPort(hp); err == nil {
		return t, nil
	}
	ta, err := net.ResolveTCPAddr("tcp", hp)
	if err != nil {
		return t, fmt.Errorf("cannot resolve broker %q: %w", s, err)
	}
	t.ap = ta.AddrPort()
	return t, nil
}

// transport is the state TLS and WebSocket add to an established connection: 48 bytes and
// the loop's slot pointer for WebSocket alone; TLS adds its secured (48 bytes) with the
// loop's record layer (a tlsrec.Conn, 256 bytes: keys and sequence numbers, and its cipher
// state while the connection is busy) or the tls.Conn (its buffers, the shared parsed
// certificates).
type transport struct {
	sec *secured // TLS (nil: none)
	// WebSocket (ws set): the frame being read, and a header or control payload cut by a
	// read (buf; before the first read, bytes that came after the upgrade's response; once
	// the frames ended, the close frame's status code or the invalid header).
	rem  uint64 // payload bytes of the current frame still to come
	buf  []byte
	op   uint8 // opcode of the current frame | wsInFrame (0: between frames)
	end  uint8 // 0, or how the broker's frames ended: wsEndClose, wsEndInvalid
	ws   bool
	frag bool // a data frame without FIN was read: continuation frames follow
	// certAsked: the broker asked for a client certificate in the TLS handshake, and the
	// client had none to give.
	certAsked bool
}

// secured is what TLS adds to a transport: the loop's record layer, or a tls.Conn.
type secured struct {
	// tls is the tls.Conn of a connection that keeps it (nil: none). With rec set it is
	// only the handshake's, read along until it has kept a session ticket (at the latest
	// until the CONNACK).
	tls *tls.Conn
	rec *tlsrec.Conn // the loop's record layer (nil: none)
	// part is a record a read cut, kept until the rest of it comes, or before the first
	// read the records the handshake's reads took past its end (nil: none; empty while the
	// connection is warm).
	part []byte
	// warm: rec's cipher state is built and the transport is in loop.warm; used: rec
	// sealed or opened since the loop's last sweep of loop.warm.
	warm, used bool
}

// loopTLS is a transport on the loop's record layer in one object: what the connection
// keeps for as long as it lives, made on its loop (packed), not among the handshake's
// garbage on a worker, so that the objects of idle connections fill whole spans of the
// heap instead of pinning spans the handshakes' garbage left mostly free.
type loopTLS struct {
	t   transport
	sec secured
	rec tlsrec.Conn
}

// packed returns t, whose secured has a record layer (no record sealed or opened yet),
// as a loopTLS.
func packed(t *transport) *transport {
	r := t.sec
	r.rec.Release() // none built yet: the copy shares nothing with the Conn it copies
	o := &loopTLS{t: *t, sec: *r, rec: *r.rec}
	o.sec.rec = &o.rec
	o.t.sec = &o.sec
	return &o.t
}

// secure reports whether t is TLS.
func (t *transport) secure() bool { return t.sec != nil }

// transportOf returns s's transport (s.flags has sfTransport).
func (l *loop) transportOf(s *session) *transport { return l.tr[s.slot] }

// setTransport gives s, which has its slot, the transport t.
func (l *loop) setTransport(s *session, t *transport) {
	if l.tr == nil { // one pointer per slot, no slack from doubling: the loop's share of clients
		l.tr = make([]*transport, 0, max(16, (l.e.cfg.Clients+len(l.e.loops)-1)/max(1, len(l.e.loops))))
	}
	for int(s.slot) >= len(l.tr) {
		l.tr = append(l.tr, nil)
	}
	l.tr[s.slot] = t
	s.flags |= sfTransport
}

// wrap turns MQTT bytes b into what goes on the wire: WebSocket frames (b's packets in one
// up to wsFrameMax), then TLS records. The result is in a loop scratch buffer, valid until the next wrap.
func (l *loop) wrap(t *transport, b []byte) []byte {
	if t.ws {
		l.frames = appendFrames(l.frames[:0], b, &l.keys)
		b = l.frames
	}
	return l.seal(t, b)
}

// seal returns b as TLS records (b itself without TLS): records of up to 2^14 bytes of b
// each, not one per packet.
func (l *loop) seal(t *transport, b []byte) []byte {
	r := t.sec
	if r == nil {
		return b
	}
	if r.rec != nil {
		l.touch(r)
		l.wire = r.rec.Seal(l.wire[:0], b)
		return l.wire
	}
	l.wire = l.wire[:0]
	_, _ = r.tls.Write(b) // wireConn.Write appends to l.wire and cannot fail
	return l.wire
}

// sendWrapped sends b, MQTT bytes, on s, which has a transport: it returns len(b) when the
// kernel took all of what b became on the wire, 0 when some of it waits in s.io.out, -1
// when the connection was lost. (Positions in s.io count wire bytes.)
func (l *loop) sendWrapped(s *session, b []byte) int {
	w := l.wrap(l.transportOf(s), b)
	switch n := l.sendRaw(s, w); {
	case n < 0:
		return -1
	case n == len(w):
		return len(b)
	}
	return 0
}

// unwrap turns what a read brought on s, which has a transport, into MQTT bytes: nil when
// none are whole yet or the connection ended (s.state is then stClosing). When its records
// ended in one the loop's record layer refused (l.recErr), the caller ends s with
// recordEnd after handling them; with no MQTT bytes to handle, unwrap does.
func (l *loop) unwrap(s *session, data []byte) []byte {
	if data = l.unwrapped(s, data); data == nil && l.recErr != nil {
		l.recordEnd(s)
	}
	return data
}

// unwrapped is unwrap but for the end of the records.
func (l *loop) unwrapped(s *session, data []byte) []byte {
	t := l.transportOf(s)
	if r := t.sec; r != nil && r.rec != nil {
		var ok bool
		if data, ok = l.open(s, r, data); !ok {
			return nil
		}
	} else if r != nil {
		if len(r.part) > 0 { // what the handshake's reads took past its end comes first
			data, r.part = append(r.part, data...), nil
		}
		wc := r.tls.NetConn().(*wireConn)
		wc.in = data
		l.wire = l.wire[:0]
		plain := l.plain[:0]
		for {
			if cap(plain)-len(plain) < 4096 {
				plain = append(plain[:cap(plain)], make([]byte, 32<<10)...)[:len(plain)]
			}
			n, err := r.tls.Read(plain[len(plain):cap(plain)])
			plain = plain[:len(plain)+n]
			if errors.Is(err, errWouldBlock) {
				break
			}
			if err != nil {
				wc.in = nil
				l.lost(s, tlsError(err))
				return nil
			}
		}
		wc.in = nil
		l.plain = plain[:0]
		if len(l.wire) > 0 { // what TLS itself answered (a key update)
			if l.sendRaw(s, l.wire) < 0 {
				return nil
			}
		}
		data = plain
	}
	if t.ws && s.state != stUpgrade {
		var lost bool
		if data, lost = l.unframe(s, t, data); lost {
			return nil
		}
		if t.end != 0 && len(data) == 0 { // else read calls it once data is handled
			l.wsEnded(s, t)
			return nil
		}
	}
	if len(data) == 0 {
		return nil
	}
	return data
}

// tlsError names a TLS failure on an established connection.
func tlsError(err error) error { return fmt.Errorf("TLS: %w", err) }

// errWouldBlock is what wireConn.Read returns on the loop when the read's ciphertext is
// used up: a temporary net.Error, which crypto/tls does not keep as the connection's error
// (conn.go: readRecordOrCCS), so the next read goes on where this one stopped.
var errWouldBlock error = wouldBlock{}

type wouldBlock struct{}

func (wouldBlock) Error() string   { return "reactor: no more ciphertext in this read" }
func (wouldBlock) Timeout() bool   { return true }
func (wouldBlock) Temporary() bool { return true }

// wireConn is the net.Conn under a tls.Conn. While the handshake runs on a handshake worker
// it blocks on the socket (poll(2)); once the connection is handed to its loop (mem set) it
// reads the ciphertext of the loop's read (in) and appends what TLS writes to *out (the
// loop's scratch), and the loop does the socket's I/O.
//
// Bounded, during the handshake, it hands crypto/tls no byte past the end of the record
// being read (it follows the records' 5-byte headers through what it read from the socket,
// as greedily as unbounded, into ahead): when the handshake is done, nothing of what follows
// it is inside the tls.Conn, and what the socket gave past it (rest) is the start of the
// connection's records for the loop's record layer.
type wireConn struct {
	fd       int
	mem      bool
	bounded  bool
	hn       uint8   // bytes of the record header in hdr
	hdr      [5]byte // the header of the record being read
	body     int     // bytes of its body still to read (0: a header is next)
	ahead    *[]byte // bounded: what the socket gave and the reads have not, from off
	off      int
	in       []byte
	out      *[]byte
	e        *Engine
	deadline time.Time
	pfd      [1]unix.PollFd
}

func (c *wireConn) Read(p []byte) (int, error) {
	if c.mem {
		if len(c.in) == 0 {
			return 0, errWouldBlock
		}
		n := copy(p, c.in)
		c.in = c.in[n:]
		return n, nil
	}
	if c.bounded {
		return c.readBounded(p)
	}
	return c.readSocket(p)
}

// readSocket reads what the socket has into p, waiting for it.
func (c *wireConn) readSocket(p []byte) (int, error) {
	for {
		n, err := unix.Read(c.fd, p)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EAGAIN):
			if err = c.wait(unix.POLLIN); err != nil {
				return 0, err
			}
			continue
		case err != nil:
			return 0, err
		case n == 0 && len(p) > 0:
			return 0, errEOF
		}
		return n, nil
	}
}

// readBounded reads into p no byte past the end of the record being read. The socket is
// read as greedily as unbounded (one read for a flight of records), into c.ahead; what the
// handshake left of it is the start of the connection's records (rest).
func (c *wireConn) readBounded(p []byte) (int, error) {
	if c.ahead == nil || len(*c.ahead) == 0 {
		if c.ahead == nil {
			c.ahead = aheadPool.Get().(*[]byte)
		}
		buf := (*c.ahead)[:cap(*c.ahead)]
		n, err := c.readSocket(buf)
		if err != nil {
			return 0, err
		}
		*c.ahead = buf[:n]
		c.off = 0
	}
	if c.body > 0 {
		p = p[:min(len(p), c.body)]
	} else {
		p = p[:min(len(p), 5-int(c.hn))]
	}
	n := copy(p, (*c.ahead)[c.off:])
	c.advance(p[:n])
	if c.off += n; c.off == len(*c.ahead) {
		*c.ahead = (*c.ahead)[:0]
	}
	return n, nil
}

// rest returns a copy of what the bounded reads took from the socket past the handshake's
// last record (nil: nothing), and gives their buffer back.
func (c *wireConn) rest() []byte {
	if c.ahead == nil {
		return nil
	}
	var r []byte
	if c.off < len(*c.ahead) {
		r = append(r, (*c.ahead)[c.off:]...)
	}
	*c.ahead = (*c.ahead)[:0]
	aheadPool.Put(c.ahead)
	c.ahead, c.off = nil, 0
	return r
}

// aheadPool holds the handshakes' read buffers.
var aheadPool = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// advance follows the records through b, bytes just read.
func (c *wireConn) advance(b []byte) {
	if c.body > 0 {
		c.body -= len(b)
		return
	}
	c.hn += uint8(copy(c.hdr[c.hn:], b))
	if c.hn == 5 {
		c.hn, c.body = 0, int(c.hdr[3])<<8|int(c.hdr[4])
	}
}

// atRecordEnd reports whether the reads ended with a whole record.
func (c *wireConn) atRecordEnd() bool { return c.hn == 0 && c.body == 0 }

func (c *wireConn) Write(p []byte) (int, error) {
	if c.mem {
		if c.out != nil {
			*c.out = append(*c.out, p...)
		}
		return len(p), nil
	}
	done := 0
	for done < len(p) {
		n, err := unix.Write(c.fd, p[done:])
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EAGAIN):
			if err = c.wait(unix.POLLOUT); err != nil {
				return done, err
			}
			continue
		case err != nil:
			return done, err
		}
		done += n
	}
	return done, nil
}

// errEOF is io.EOF (the broker closed the connection during the handshake).
var errEOF = errors.New("EOF: the broker closed the connection")

// wait blocks until the socket is ready for ev, the deadline passes, or the engine closes.
func (c *wireConn) wait(ev int16) error {
	for {
		if c.e.closing.Load() {
			return errors.New("the engine is closing")
		}
		left := time.Until(c.deadline)
		if left <= 0 {
			return os.ErrDeadlineExceeded
		}
		c.pfd[0] = unix.PollFd{Fd: int32(c.fd), Events: ev}
		n, err := unix.Poll(c.pfd[:], int(min(left, 100*time.Millisecond)/time.Millisecond)+1)
		if err != nil && !errors.Is(err, unix.EINTR) {
			return err
		}
		if n > 0 {
			return nil
		}
	}
}

func (c *wireConn) Close() error                     { return nil } // the loop closes the socket
func (c *wireConn) LocalAddr() net.Addr              { return noAddr{} }
func (c *wireConn) RemoteAddr() net.Addr             { return noAddr{} }
func (c *wireConn) SetDeadline(time.Time) error      { return nil }
func (c *wireConn) SetReadDeadline(time.Time) error  { return nil }
func (c *wireConn) SetWriteDeadline(time.Time) error { return nil }

type noAddr struct{}

func (noAddr) Network() string { return "tcp" }
func (noAddr) String() string  { return "broker" }

// hsJob is one TLS connection's set-up on a handshake worker: TCP connect, TLS handshake.
type hsJob struct {
	l      *loop
	s      *session
	tg     *target
	fd     int
	client int
	id     string    // the client's id (its certificate's templates)
	start  time.Time // deadline base: the dial
	// Results.
	t     *transport
	cause Cause
	err   error
	hs    Handshake
}

// Handshake describes how a connection's transport was set up (HandshakeObserver).
type Handshake struct {
	TLS       time.Duration // the TLS handshake, from the TCP connection to its end (0: no TLS)
	TLSCPU    time.Duration // the CPU time (this process, thread time) the TLS handshake took
	WebSocket time.Duration // the WebSocket upgrade, request to response (0: no WebSocket)
	Resumed   bool          // the TLS session was resumed from a ticket
	Version   uint16        // the TLS version (tls.VersionTLS12, tls.VersionTLS13)
	// RecordLayer is what seals and opens the established connection's records:
	// RecordLayerLoop or RecordLayerTLSConn ("" without TLS).
	RecordLayer string
	// ClientCert and ClientCertCPU are the time and the CPU time the client's own
	// certificate took to make during the handshake (Config.ClientCerts; part of TLS and
	// TLSCPU), Minted that it was minted, not read from files (0, false: none was made).
	ClientCert, ClientCertCPU time.Duration
	Minted                    bool
}

// HandshakeObserver is an Observer that also hears of each connection's TLS handshake and
// WebSocket upgrade, when they succeed, on the connection's loop (before its Connected):
// once for the TLS handshake (Handshake.TLS set) and once for the upgrade (WebSocket set).
type HandshakeObserver interface {
	Handshake(loop, client int, h Handshake)
}

// handshakers is the engine's pool of handshake workers, started at its first job.
type handshakers struct {
	once sync.Once
	jobs chan *hsJob
}

// submit hands j to a worker. The channel holds every dial without a verdict
// (Config.MaxConnecting), so it never blocks a loop.
func (e *Engine) submit(j *hsJob) {
	e.hs.once.Do(func() {
		e.hs.jobs = make(chan *hsJob, e.cfg.Loops*((e.cfg.MaxConnecting+e.cfg.Loops-1)/e.cfg.Loops)+e.cfg.Loops)
		for range e.cfg.HandshakeWorkers {
			go e.handshakeWorker(e.hs.jobs)
		}
	})
	e.hs.jobs <- j
}

// stopHandshakers ends the workers once no loop submits any more.
func (e *Engine) stopHandshakers() {
	e.hs.once.Do(func() {})
	if e.hs.jobs != nil {
		close(e.hs.jobs)
	}
}

// handshakeWorker sets connections up until the engine stops. It keeps its thread, so
// that the thread's CPU time measures the TLS handshake it runs.
func (e *Engine) handshakeWorker(jobs <-chan *hsJob) {
	runtime.LockOSThread()
	for j := range jobs {
		e.setUp(j)
		l := j.l
		if !l.execute(func() { l.handshaken(j) }) { // the loop has ended
			_ = unix.Close(j.fd)
			e.sessions.Add(-1)
		}
	}
}

// setUp runs j's TCP connect and TLS handshake, blocking.
func (e *Engine) setUp(j *hsJob) {
	wc := &wireConn{fd: j.fd, e: e, deadline: j.start.Add(e.cfg.DialTimeout)}
	if err := wc.wait(unix.POLLOUT); err != nil {
		j.cause, _ = classify(err)
		j.err = err
		if errors.Is(err, os.ErrDeadlineExceeded) {
			j.err = fmt.Errorf("no TCP connection within %v", e.cfg.DialTimeout)
		}
		return
	}
	if err := socketError(j.fd); err != nil {
		j.cause, _ = classify(err)
		j.err = err
		return
	}
	wc.deadline = time.Now().Add(e.cfg.DialTimeout)
	t := &transport{ws: j.tg.ws()}
	{
		cfg := e.clientTLS(j.tg, j.client)
		// The connection keeps its configuration, and with it this callback and what it
		// holds: the client's id and what the certificate cost, never the certificate.
		var made *Handshake // its ClientCert fields
		if cc, index := e.clientCerts(j.client); cc != nil {
			id, m := j.id, new(Handshake)
			made = m
			cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
				start, cpu := time.Now(), threadCPU()
				cert, err := cc.Certificate(id, index)
				m.ClientCert, m.ClientCertCPU, m.Minted = time.Since(start), threadCPU()-cpu, cc.Minting()
				return cert, err
			}
		}
		if len(cfg.Certificates) == 0 && cfg.GetClientCertificate == nil {
			// In TLS 1.3 a broker that requires a certificate says so only after the
			// handshake, with an alert a reset may overtake: note that it asked.
			cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
				t.certAsked = true
				return &tls.Certificate{}, nil // none, as without the callback
			}
		}
		var kl *keyLog // the loop's record layer wants the traffic secrets
		if e.cfg.TLSRecordLayer != RecordLayerTLSConn && cfg.KeyLogWriter == nil {
			kl = &keyLog{}
			cfg.KeyLogWriter, wc.bounded = kl, true
			defer kl.zero()
		}
		c := tls.Client(wc, cfg)
		start, cpu := time.Now(), threadCPU()
		err := c.Handshake()
		j.hs.TLS, j.hs.TLSCPU = time.Since(start), threadCPU()-cpu
		if made != nil {
			j.hs.ClientCert, j.hs.ClientCertCPU, j.hs.Minted = made.ClientCert, made.ClientCertCPU, made.Minted
		}
		if err != nil {
			wc.rest()
			j.cause, j.err = CauseTLS, handshakeError(err, e.cfg.DialTimeout)
			return
		}
		st := c.ConnectionState()
		j.hs.Resumed, j.hs.Version = st.DidResume, st.Version
		t.sec, j.hs.RecordLayer = &secured{tls: c}, RecordLayerTLSConn
		if kl != nil && st.Version == tls.VersionTLS13 && tlsrec.Supported(st.CipherSuite) && wc.atRecordEnd() &&
			len(kl.client) > 0 && len(kl.server) > 0 {
			if rc, err := tlsrec.New(st.CipherSuite, tlsrec.Client, kl.client, kl.server); err == nil {
				t.sec.rec, j.hs.RecordLayer = rc, RecordLayerLoop
				if cfg.ClientSessionCache == nil {
					t.sec.tls = nil // no tickets to keep: the tls.Conn has no more to do
				}
			}
		}
		t.sec.part = wc.rest() // the broker's first records (its tickets), read with the handshake's
		wc.bounded = false
	}
	wc.mem = true
	j.t = t
}

// handshakeError is the one line a failed TLS handshake is reported with: what crypto/tls
// says, and for a certificate problem what to do about it.
func handshakeError(err error, timeout time.Duration) error {
	var ua x509.UnknownAuthorityError
	var hn x509.HostnameError
	var inv x509.CertificateInvalidError
	var ve *tls.CertificateVerificationError
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("TLS handshake not done within %v", timeout)
	case errors.As(err, &ua):
		return fmt.Errorf("TLS handshake: %w (the broker's certificate is not signed by a CA given with --cacert or the system's; --insecure skips the check)", err)
	case errors.As(err, &hn):
		return fmt.Errorf("TLS handshake: %w (the certificate is not for this host: give the name it is for with --sni, or --insecure)", err)
	case errors.As(err, &inv):
		return fmt.Errorf("TLS handshake: %w (--insecure skips the check)", err)
	case errors.As(err, &ve):
		return fmt.Errorf("TLS handshake: %w", err)
	}
	return fmt.Errorf("TLS handshake: %w", err)
}

// threadCPU returns the calling thread's CPU time.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// handshaken takes back, on the loop, a connection whose transport is set up (or failed):
// it joins the epoll set and sends its CONNECT.
func (l *loop) handshaken(j *hsJob) {
	s, e := j.s, l.e
	s.flags &^= sfHandshake
	if s.state == stClosing { // closed while its handshake ran (the engine is closing)
		_ = unix.Close(j.fd)
		s.fd = -1
		e.sessions.Add(-1)
		return
	}
	if j.err != nil {
		l.fail(s, j.cause, j.err.Error())
		return
	}
	t := j.t
	if r := t.sec; r != nil && r.rec == nil {
		r.tls.NetConn().(*wireConn).out = &l.wire
	} else if r != nil {
		t = packed(t)
		if r = t.sec; len(r.part) > 0 && r.tls != nil { // the handshake's tls.Conn reads them too
			l.tickets(s, r, r.part)
		}
	}
	l.setTransport(s, t)
	if o, ok := e.cfg.Observer.(HandshakeObserver); ok {
		o.Handshake(l.idx, int(s.client), j.hs)
	}
	if t.ws {
		s.state = stUpgrade // the request goes out once the socket is in the epoll set
	} else {
		l.awaitConnack(s)
	}
	ev := eventData(s.fd, s.slot)
	ev.Events = s.epollEvents()
	if err := unix.EpollCtl(l.ep, unix.EPOLL_CTL_ADD, int(s.fd), &ev); err != nil {
		cause, ex := classify(err)
		l.fail(s, cause, ex)
		return
	}
	if t.ws {
		l.upgrade(s)
		return
	}
	l.write(s, AppendConnect(l.out[:0], s.spec, s.maxIn))
}

// dialTransport hands the connect of s (socket fd, connect() in progress) to a handshake
// worker.
func (l *loop) dialTransport(s *session, fd int, tg *target) {
	e := l.e
	s.fd = int32(fd)
	s.state = stHandshake
	s.flags |= sfHandshake
	l.add(s)
	e.sessions.Add(1)
	j := &hsJob{l: l, s: s, tg: tg, fd: fd, client: int(s.client), start: time.Now()}
	if s.spec != nil {
		j.id = s.spec.ID
	}
	e.submit(j)
}

// clientCerts is where client's certificate comes from (Config.ClientCert).
func (e *Engine) clientCerts(client int) (*ClientCerts, int) {
	if e.cfg.ClientCert == nil {
		return nil, 0
	}
	return e.cfg.ClientCert(client)
}

// clientTLS returns the TLS configuration of client i's connection to tg: the engine's, with
// tg's host as the server name unless one is given, and the client's own entry in the
// shared session cache (a reconnect resumes the client's session, not another client's).
func (e *Engine) clientTLS(tg *target, client int) *tls.Config {
	c := e.tlsBase.Clone()
	if c.ServerName == "" {
		c.ServerName = tg.host
	}
	switch {
	case e.tlsSess != nil:
		c.ClientSessionCache = clientSlot{c: e.tlsSess, client: client}
	case c.ClientSessionCache != nil:
		c.ClientSessionCache = clientCache{c: c.ClientSessionCache, prefix: strconv.Itoa(client) + "/"}
	}
	return c
}

// clientCache is one client's view of the shared session cache.
type clientCache struct {
	c      tls.ClientSessionCache
	prefix string
}

func (k clientCache) Get(key string) (*tls.ClientSessionState, bool) { return k.c.Get(k.prefix + key) }
func (k clientCache) Put(key string, cs *tls.ClientSessionState)     { k.c.Put(k.prefix+key, cs) }
