package sink

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"
	"golang.org/x/sys/unix"

	"github.com/mqblast/mqblast/codec"
)

var (
	// errQuit closes a connection after its pending replies, without counting an error.
	errQuit = errors.New("sink: disconnect")
	// errNotConnected: a packet other than CONNECT before CONNECT [MQTT-3.1.0-1].
	errNotConnected = &codec.Error{Code: codec.ReasonProtocolError}
	// errProtocol: a second CONNECT [MQTT-3.1.0-2], a packet only a server sends, or AUTH.
	errProtocol = &codec.Error{Code: codec.ReasonProtocolError}
	// errTopicAlias: a topic alias of 0, over the Topic Alias Maximum, or never set [MQTT-3.3.2-9].
	errTopicAlias = &codec.Error{Code: codec.ReasonTopicAliasInvalid}
	// errHeldOver: the connection's cut packet took the bytes held past Config.MaxHeld.
	errHeldOver = &codec.Error{Code: codec.ReasonQuotaExceeded}
)

// session is one client connection. It is owned by the event loop.
type session struct {
	c       gnet.Conn
	out     []byte     // relayed copies not yet handed to the socket
	subs    []subEntry // this client's subscriptions
	aliases [][]byte   // 5.0 topic aliases the client set, indexed by alias; nil until the first

	mark     uint64 // table.epoch of the last match that took this session
	matchIdx int32  // its index in table.matches for that match

	// held is the bytes of a cut packet left in gnet's buffer by the last read, need the cut
	// packet's whole size once its fixed header is in (an MQTT packet's fits in 32 bits, and
	// the session in the allocator's 128-byte class).
	held, need int32
	maxPacket  uint32 // the client's 5.0 Maximum Packet Size; 0 means none
	recvMax    uint16 // the client's Receive Maximum (65535 for 3.1.1)
	inflight   uint16 // QoS 1/2 copies sent and not yet acknowledged
	nextID     uint16
	v          codec.Version
	tls        *tlsState // a TLS connection's handshake or record layer; nil over TCP
	ws         *wsState  // a WebSocket connection's upgrade and frames; nil for raw MQTT
	connected  bool
	dirty      bool // in handler.dirty
	closed     bool
}

// handler is the gnet event handler. With one event loop, every field but c, tid and the
// flusher's channels is owned by that loop.
type handler struct {
	gnet.BuiltinEventEngine
	cfg  *Config
	c    counters
	most int64 // open connections held at most: cfg.MaxConnections, or PerProcess
	boot func(gnet.Engine)
	t    table

	el           gnet.EventLoop // the one event loop, from the first connection
	held         int            // the sessions' held bytes, against cfg.MaxHeld
	flusher      flushRunnable
	flushPending bool
	dirty        []*session
	kick         chan time.Duration // FlushDelay > 0: how long the delay goroutine waits to flush
	lastFlush    time.Time
	stop         chan struct{}
	stopOnce     sync.Once
	tid          atomic.Int64  // the loop's thread, with LockOSThread
	turnFD       int           // the listener (a dup) to pass the turn with; -1: no turns
	lastYield    time.Time     // the loop last passed through the Go scheduler
	cpuBase      time.Duration // its CPU time when the sink first used it; written before tid

	// Decode targets and replies, reused for every packet.
	connect  codec.Connect
	connack  codec.Connack
	pub      codec.Publish
	fwd      codec.Publish
	ack      codec.Ack
	reply    codec.Ack
	sub      codec.Subscribe
	suback   codec.Suback
	unsub    codec.Unsubscribe
	unsuback codec.Unsuback
	disc     codec.Disconnect
	out      []byte // replies to the current read
	plain    []byte // TLS: the plaintext of the current read's records
	sealed   []byte // TLS: the records of the current write
	ctl      []byte // WebSocket: the upgrade's response and pongs of the current read
	wire     []byte // WebSocket: the frames of the current write
	wsPlain  []byte // WebSocket: the MQTT bytes of the current read's frames

	published  bool       // the current read carried a PUBLISH (TLS: the cipher state is kept)
	handshakes int        // TLS handshakes running, at most MaxHandshakes
	hsQueue    []*session // TLS connections waiting for a handshake goroutine
	enc        [2][]byte  // the current PUBLISH encoded at QoS 0 for 3.1.1 and for 5.0 subscribers
	idBuf      []byte
}

type flushRunnable struct{ h *handler }

// Run is the flush task on the event loop.
func (f flushRunnable) Run(context.Context) error {
	f.h.flush()
	return nil
}

func newHandler(cfg *Config) *handler {
	h := &handler{cfg: cfg, stop: make(chan struct{}), most: int64(cfg.MaxConnections), turnFD: -1}
	if h.most <= 0 {
		h.most = int64(PerProcess())
	}
	h.flusher = flushRunnable{h}
	if cfg.FlushDelay > 0 {
		h.kick = make(chan time.Duration, 1)
		go h.delayLoop()
	}
	return h
}

func (h *handler) delayLoop() {
	t := time.NewTimer(time.Hour)
	t.Stop()
	for {
		select {
		case d := <-h.kick:
			t.Reset(d)
		case <-h.stop:
			return
		}
		select {
		case <-t.C:
		case <-h.stop:
			return
		}
		_ = h.el.Execute(context.Background(), h.flusher)
	}
}

func (h *handler) stopFlusher() { h.stopOnce.Do(func() { close(h.stop) }) }

// startTurn readies cfg.Turn at boot: it keeps a descriptor of the listener to pass the
// turn with, and the first process takes the turn. Without turns, or where the kernel
// cannot steer, the kernel hashes as it does for every SO_REUSEPORT group.
func (h *handler) startTurn(eng gnet.Engine) {
	t := h.cfg.Turn
	if t.Procs <= 1 {
		return
	}
	fd, err := eng.Dup()
	if err != nil {
		return
	}
	if t.Index == 0 {
		if err := steer(fd, 0); err != nil {
			_ = unix.Close(fd)
			return
		}
	}
	h.turnFD = fd
}

// passTurn gives the port's new connections to the next process, after the last to the
// first again; the loop calls it at every accept that finds this process holding its share.
// The turn so goes round: what comes after the shares (reconnects after a storm, say) goes
// to the processes with room, each full one passed with one connection more.
func (h *handler) passTurn() {
	_ = steer(h.turnFD, (h.cfg.Turn.Index+1)%h.cfg.Turn.Procs)
}

// OnBoot reports the engine to Start.
func (h *handler) OnBoot(eng gnet.Engine) gnet.Action {
	h.boot(eng)
	return gnet.None
}

// OnOpen creates the connection's session.
func (h *handler) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	if h.el == nil {
		h.el = c.EventLoop()
		if h.cfg.LockOSThread {
			tid := int64(unix.Gettid())
			h.cpuBase = threadCPU(tid) // the thread may have run other goroutines before
			h.tid.Store(tid)
		}
	}
	h.c.connectionsTotal.Add(1)
	n := h.c.connections.Add(1)
	if h.turnFD >= 0 && n >= int64(h.cfg.Turn.Fill) {
		h.passTurn()
	}
	s := &session{c: c}
	c.SetContext(s)
	if n > h.most {
		return nil, gnet.Close
	}
	if h.cfg.TLS != nil {
		h.startTLS(s)
	}
	if h.cfg.WS {
		s.ws = &wsState{}
	}
	return nil, gnet.None
}

// OnClose drops the session's subscriptions. A connection the sink closes (err nil: after
// a DISCONNECT, an error or at shutdown) first gets a WebSocket close frame and a TLS
// close_notify, as it speaks them.
func (h *handler) OnClose(c gnet.Conn, err error) gnet.Action {
	s, _ := c.Context().(*session)
	if s == nil {
		return gnet.None
	}
	if err == nil && !s.closed {
		h.goodbye(s)
	}
	s.closed = true
	if s.tls != nil && s.tls.pipe != nil {
		_ = s.tls.pipe.Close() // the handshake's goroutine ends; its end is counted on the loop
	}
	if len(s.subs) > 0 {
		h.t.removeAll(s)
		h.c.subscriptions.Store(int64(h.t.count))
	}
	h.c.connections.Add(-1)
	if !s.connected {
		h.c.refused.Add(1)
	}
	if s.inflight > 0 {
		h.c.unacked.Add(-int64(s.inflight))
	}
	if s.held > 0 { // read, never handled: counted in with the connection's end
		h.c.bytesIn.Add(uint64(s.held))
		h.hold(s, 0)
	}
	s.out, s.aliases = nil, nil
	return gnet.None
}

// hold records that s now holds n bytes of a cut packet in gnet's buffer.
func (h *handler) hold(s *session, n int) {
	if d := n - int(s.held); d != 0 {
		h.held += d
		h.c.heldBytes.Add(int64(d))
		s.held = int32(n)
	}
}

// OnTraffic handles every complete packet gnet holds for c, writes the replies in one write and
// schedules a flush of what was relayed. A cut packet stays in gnet's buffer, not looked at
// again until it is whole, within cfg.MaxHeld over all connections: the connection whose
// cut packet takes the bytes held past it is closed.
func (h *handler) OnTraffic(c gnet.Conn) gnet.Action {
	h.yield()
	s := c.Context().(*session)
	if s.tls != nil {
		return h.tlsTraffic(c, s)
	}
	if s.ws != nil {
		return h.wsTraffic(c, s)
	}
	act := gnet.None
	if in := c.InboundBuffered(); in < int(s.need) {
		h.hold(s, in) // still cut: gnet keeps what it read
	} else {
		act = h.handle(c, s)
	}
	if act == gnet.None && s.held > 0 && h.held > h.cfg.MaxHeld {
		h.c.heldOver.Add(1)
		act = h.fail(s, errHeldOver)
	}
	if len(h.out) > 0 {
		_, _ = c.Write(h.out)
		h.c.bytesOut.Add(uint64(len(h.out)))
		h.out = h.out[:0]
	}
	if len(h.dirty) > 0 {
		h.schedule()
	}
	return act
}

// handle handles every complete packet gnet holds for c, and notes the size of a cut one
// left at the end (s.need).
func (h *handler) handle(c gnet.Conn, s *session) gnet.Action {
	buf, _ := c.Peek(-1)
	used, act := h.packets(s, buf)
	if used > 0 {
		_, _ = c.Discard(used)
		h.c.bytesIn.Add(uint64(used))
	}
	h.hold(s, len(buf)-used)
	s.need = 0
	if act == gnet.None && s.held > 0 {
		n, _ := codec.PacketLen(buf[used:]) // 0 while its fixed header is cut
		s.need = int32(n)
	}
	return act
}

// packets handles the whole packets at the start of buf and returns the bytes they took.
func (h *handler) packets(s *session, buf []byte) (used int, act gnet.Action) {
	for {
		hd, body, n, err := codec.Split(buf[used:], h.cfg.MaxPacketSize)
		if err == nil && n > 0 {
			used += n
			err = h.packet(s, hd, body)
		}
		if err != nil {
			return used, h.fail(s, err)
		}
		if n == 0 {
			return used, gnet.None
		}
	}
}

// fail closes s after err: a 5.0 client that has connected gets a DISCONNECT with the reason.
func (h *handler) fail(s *session, err error) gnet.Action {
	if errors.Is(err, errQuit) {
		return gnet.Close
	}
	if !s.connected {
		return gnet.Close // counted as refused in OnClose
	}
	if !errors.Is(err, errHeldOver) {
		h.c.protocolErrors.Add(1)
	}
	if s.v == codec.V5 {
		h.disc = codec.Disconnect{Reason: codec.ReasonProtocolError}
		var ce *codec.Error
		if errors.As(err, &ce) {
			h.disc.Reason = ce.Code
		}
		h.out = codec.AppendDisconnect(h.out, &h.disc, s.v)
	}
	return gnet.Close
}

func (h *handler) packet(s *session, hd codec.Header, body []byte) error {
	if !s.connected {
		if hd.Type != codec.TypeConnect {
			return errNotConnected // [MQTT-3.1.0-1]
		}
		return h.handleConnect(s, body)
	}
	switch hd.Type {
	case codec.TypePublish:
		return h.handlePublish(s, hd, body)
	case codec.TypePuback, codec.TypePubcomp:
		if err := codec.DecodePuback(body, s.v, &h.ack); err != nil {
			return err
		}
		h.acked(s)
	case codec.TypePubrec: // of a QoS 2 copy: release it, still in flight until PUBCOMP
		if err := codec.DecodePubrec(body, s.v, &h.ack); err != nil {
			return err
		}
		h.reply.ID = h.ack.ID
		h.out = codec.AppendPubrel(h.out, &h.reply, s.v)
	case codec.TypePubrel:
		if err := codec.DecodePubrel(body, s.v, &h.ack); err != nil {
			return err
		}
		h.reply.ID = h.ack.ID
		h.out = codec.AppendPubcomp(h.out, &h.reply, s.v)
	case codec.TypeSubscribe:
		return h.handleSubscribe(s, body)
	case codec.TypeUnsubscribe:
		return h.handleUnsubscribe(s, body)
	case codec.TypePingreq:
		if err := codec.DecodePingreq(body); err != nil {
			return err
		}
		h.out = codec.AppendPingresp(h.out)
	case codec.TypeDisconnect:
		if err := codec.DecodeDisconnect(body, s.v, &h.disc); err != nil {
			return err
		}
		return errQuit
	default:
		return errProtocol
	}
	return nil
}

func (h *handler) acked(s *session) {
	if s.inflight > 0 {
		s.inflight--
		h.c.acked.Add(1)
		h.c.unacked.Add(-1)
	}
}

func (h *handler) handleConnect(s *session, body []byte) error {
	v, err := codec.DecodeConnect(body, &h.connect)
	if err != nil {
		return err
	}
	s.v, s.connected, s.recvMax = v, true, 65535
	h.connack = codec.Connack{}
	if v == codec.V5 {
		p := &h.connect.Props
		if p.Has(codec.PropReceiveMaximum) && p.ReceiveMaximum > 0 {
			s.recvMax = p.ReceiveMaximum
		}
		if p.Has(codec.PropMaximumPacketSize) {
			s.maxPacket = p.MaximumPacketSize
		}
		cp := &h.connack.Props
		cp.ReceiveMaximum = h.cfg.ReceiveMaximum
		cp.Set(codec.PropReceiveMaximum)
		cp.TopicAliasMaximum = h.cfg.TopicAliasMaximum
		cp.Set(codec.PropTopicAliasMaximum)
		cp.MaximumPacketSize = uint32(h.cfg.MaxPacketSize)
		cp.Set(codec.PropMaximumPacketSize)
		cp.RetainAvailable = 0 // an instrument keeps nothing
		cp.Set(codec.PropRetainAvailable)
		cp.SubIDAvailable = 0
		cp.Set(codec.PropSubIDAvailable)
		if len(h.connect.ClientID) == 0 {
			// [MQTT-3.2.2-16] a 5.0 client that sent no identifier is given one.
			h.idBuf = strconv.AppendUint(append(h.idBuf[:0], "sink-"...), h.c.connectionsTotal.Load(), 10)
			cp.AssignedClientID = h.idBuf
			cp.Set(codec.PropAssignedClientID)
		}
	}
	h.out = codec.AppendConnack(h.out, &h.connack, v)
	h.c.connected.Add(1)
	return nil
}

func (h *handler) handlePublish(s *session, hd codec.Header, body []byte) error {
	p := &h.pub
	if err := codec.DecodePublish(hd, body, s.v, p); err != nil {
		return err
	}
	topic := p.Topic
	if s.v == codec.V5 && p.Props.Has(codec.PropTopicAlias) {
		a := p.Props.TopicAlias
		if a == 0 || a > h.cfg.TopicAliasMaximum {
			return errTopicAlias // [MQTT-3.3.2-8] [MQTT-3.3.2-9]
		}
		if s.aliases == nil {
			s.aliases = make([][]byte, int(h.cfg.TopicAliasMaximum)+1)
		}
		if len(topic) > 0 {
			s.aliases[a] = append(s.aliases[a][:0], topic...)
		} else if topic = s.aliases[a]; len(topic) == 0 {
			return errTopicAlias
		}
	}
	h.c.publishIn[p.QoS].Add(1)
	h.published = true
	switch p.QoS {
	case 1:
		h.reply.ID = p.ID
		h.out = codec.AppendPuback(h.out, &h.reply, s.v)
	case 2:
		h.reply.ID = p.ID
		h.out = codec.AppendPubrec(h.out, &h.reply, s.v)
	}
	h.relay(s, topic, p)
	return nil
}

// relay queues a copy of p (on topic) to every matching subscription's session. It allocates
// nothing once the buffers have grown.
func (h *handler) relay(from *session, topic []byte, p *codec.Publish) {
	ms := h.t.match(topic, from)
	if len(ms) == 0 {
		h.c.noSubscribers.Add(1)
		return
	}
	f := &h.fwd
	f.Topic, f.Payload, f.Dup, f.Retain, f.ID = topic, p.Payload, false, false, 0
	if from.v == codec.V5 {
		f.Props = p.Props
		f.Props.Present &^= 1 << codec.PropTopicAlias
	} else {
		f.Props = codec.Properties{}
	}
	h.enc[0], h.enc[1] = h.enc[0][:0], h.enc[1][:0]
	var relayed [3]uint64
	var full, large, recvMax uint64
	var inflight int64
	for _, m := range ms {
		s := m.s
		q := min(byte(p.QoS), m.qos)
		var size int
		vi := 0
		if s.v == codec.V5 {
			vi = 1
		}
		if q == 0 {
			if len(h.enc[vi]) == 0 {
				f.QoS = 0
				h.enc[vi] = codec.AppendPublish(h.enc[vi], f, s.v)
			}
			size = len(h.enc[vi])
		} else {
			f.QoS = codec.QoS(q)
			size = codec.SizePublish(f, s.v)
		}
		switch {
		case s.maxPacket > 0 && size > int(s.maxPacket):
			large++ // [MQTT-3.1.2-25]
			continue
		case s.c.OutboundBuffered()+len(s.out)+size > h.cfg.MaxOutput:
			full++
			continue
		case q > 0 && s.inflight >= s.recvMax:
			recvMax++ // [MQTT-3.3.4-9]
			continue
		}
		if q == 0 {
			s.out = append(s.out, h.enc[vi]...)
		} else {
			if s.nextID++; s.nextID == 0 {
				s.nextID = 1
			}
			f.QoS, f.ID = codec.QoS(q), s.nextID
			s.out = codec.AppendPublish(s.out, f, s.v)
			s.inflight++
			inflight++
		}
		relayed[q]++
		if !s.dirty {
			s.dirty = true
			h.dirty = append(h.dirty, s)
		}
	}
	for q, n := range relayed {
		if n > 0 {
			h.c.relayed[q].Add(n)
		}
	}
	if inflight > 0 {
		h.c.unacked.Add(inflight)
	}
	if full+large+recvMax > 0 {
		h.c.outputFull.Add(full)
		h.c.tooLarge.Add(large)
		h.c.receiveMaximum.Add(recvMax)
	}
}

// yieldInterval is how often a busy event loop passes through the Go scheduler.
const yieldInterval = 5 * time.Millisecond

// yield passes the event loop's goroutine through the Go scheduler when it has not for
// yieldInterval. A loop that never parks (events waiting at every epoll_wait) is otherwise
// preempted by the runtime's sysmon every 10 ms, and each preemption sets sysmon back to
// waking every 20 µs: in the 2M msg/s fan-out (make bench-fanout) the sink's sysmon thread
// woke 2,400 times a second and took 8 % of a core.
func (h *handler) yield() {
	if now := time.Now(); now.Sub(h.lastYield) > yieldInterval {
		runtime.Gosched()
		h.lastYield = now
	}
}

// schedule arranges a flush on the event loop: at the end of its current round, or, with a
// FlushDelay, no sooner than FlushDelay after the last flush.
func (h *handler) schedule() {
	if h.flushPending {
		return
	}
	h.flushPending = true
	if h.kick != nil {
		if wait := h.cfg.FlushDelay - time.Since(h.lastFlush); wait > 0 {
			select {
			case h.kick <- wait: // flushPending: nothing else is queued for the goroutine
				return
			default:
			}
		}
	}
	_ = h.el.Execute(context.Background(), h.flusher)
}

// flush hands every dirty session's relayed copies to its socket, one write each.
func (h *handler) flush() {
	h.flushPending = false
	var bytes, writes uint64
	for i, s := range h.dirty {
		h.dirty[i] = nil
		s.dirty = false
		if s.closed || len(s.out) == 0 {
			continue
		}
		bytes += uint64(len(s.out))
		writes++
		out := s.out
		if s.ws != nil {
			out = h.wsFrame(out)
			bytes += uint64(len(out) - len(s.out))
		}
		if s.tls != nil {
			h.sealed = s.tls.rec.Seal(h.sealed[:0], out)
			_, _ = s.c.Write(h.sealed)
		} else {
			_, _ = s.c.Write(out) // gnet keeps what the socket did not take; on error it closes c
		}
		if cap(s.out) > keepOutput {
			s.out = nil
		} else {
			s.out = s.out[:0]
		}
	}
	h.dirty = h.dirty[:0]
	if h.kick != nil { // from the end: a flush of a thousand sockets takes some ms itself
		h.lastFlush = time.Now()
	}
	h.c.bytesOut.Add(bytes)
	h.c.writes.Add(writes)
}

func (h *handler) handleSubscribe(s *session, body []byte) error {
	if err := codec.DecodeSubscribe(body, s.v, &h.sub); err != nil {
		return err
	}
	h.suback.ID = h.sub.ID
	h.suback.Reasons = h.suback.Reasons[:0]
	for i := range h.sub.Filters {
		f := &h.sub.Filters[i]
		rc := codec.ReasonCode(f.QoS) // granted QoS n is reason code n in both versions
		if !h.t.add(s, f.Filter, byte(f.QoS), s.v == codec.V5 && f.NoLocal) {
			rc = codec.ReasonUnspecifiedError // 3.1.1 failure
			if s.v == codec.V5 {
				rc = codec.ReasonTopicFilterInvalid
			}
		}
		h.suback.Reasons = append(h.suback.Reasons, rc)
	}
	h.out = codec.AppendSuback(h.out, &h.suback, s.v)
	h.c.subscriptions.Store(int64(h.t.count))
	return nil
}

func (h *handler) handleUnsubscribe(s *session, body []byte) error {
	if err := codec.DecodeUnsubscribe(body, s.v, &h.unsub); err != nil {
		return err
	}
	h.unsuback.ID = h.unsub.ID
	h.unsuback.Reasons = h.unsuback.Reasons[:0]
	for _, f := range h.unsub.Filters {
		rc := codec.ReasonSuccess
		if !h.t.remove(s, f) {
			rc = codec.ReasonNoSubscriptionExisted
		}
		if s.v == codec.V5 {
			h.unsuback.Reasons = append(h.unsuback.Reasons, rc)
		}
	}
	h.out = codec.AppendUnsuback(h.out, &h.unsuback, s.v)
	h.c.subscriptions.Store(int64(h.t.count))
	return nil
}
