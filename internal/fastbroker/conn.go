package fastbroker

import (
	"errors"
	"net"
	"strconv"
	"sync"

	"github.com/mqblast/mqblast/codec"
)

const (
	readSize   = 64 << 10 // initial read buffer; grows to fit a larger packet
	batchBytes = 64 << 10 // a streaming write is at least this large unless fewer messages are due
	maxPending = 1 << 20  // replies a reader hands to a blocked stream before it stops reading
)

// errProtocol closes a connection that sent something this server does not accept: a packet
// before CONNECT, a second CONNECT, a packet only a server sends, or AUTH.
var errProtocol = errors.New("fastbroker: protocol error")

// conn is one client connection. Everything but nc, done and the stream goroutine's own state is
// owned by the reading goroutine.
type conn struct {
	s    *Server
	nc   net.Conn
	done chan struct{} // closed when the reading goroutine returns

	// While a stream runs, its goroutine alone writes to nc: the reader hands its replies over
	// in pending, which the stream writes ahead of its next batch. With two writers the
	// replies could wait behind the stream for seconds, because the socket's write lock is
	// not fair.
	wmu       sync.Mutex
	drained   sync.Cond // signalled, with wmu, when the stream takes pending or stops
	streaming bool
	pending   []byte
	wake      chan struct{} // tells a paced stream that pending has bytes

	v         codec.Version
	connected bool
	subscribe bool   // the first SUBSCRIBE arrived: start streaming after its SUBACK is written
	topic     []byte // the topic streamed, from the first SUBSCRIBE (copied: it outlives the buffer)

	in  []byte
	out []byte

	// Decode targets and reply packets, reused for every packet of the connection.
	connect  codec.Connect
	connack  codec.Connack
	pub      codec.Publish
	ack      codec.Ack // decoded
	reply    codec.Ack // sent: only ID changes
	sub      codec.Subscribe
	suback   codec.Suback
	unsub    codec.Unsubscribe
	unsuback codec.Unsuback
	disc     codec.Disconnect

	// Counts of the current read, added to the server's counters once per read.
	conns    uint64
	received [3]uint64
	acks     uint64
}

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{s: s, nc: nc, done: make(chan struct{}), wake: make(chan struct{}, 1)}
	c.drained.L = &c.wmu
	return c
}

// serve reads until the connection fails or closes, answering each read's packets with one write.
func (c *conn) serve() {
	defer c.s.wg.Done()
	defer c.s.forget(c)
	defer close(c.done)
	defer c.nc.Close()
	c.in = make([]byte, readSize)
	c.out = make([]byte, 0, 4<<10)
	start, end := 0, 0
	for {
		if end == len(c.in) {
			if start > 0 { // move the partial packet to the front
				end = copy(c.in, c.in[start:end])
				start = 0
			} else { // one packet fills the buffer
				c.in = append(c.in, make([]byte, len(c.in))...)
			}
		}
		n, err := c.nc.Read(c.in[end:])
		if err != nil {
			return
		}
		end += n
		used, quit, err := c.process(c.in[start:end])
		start += used
		if start == end {
			start, end = 0, 0
		}
		c.flushStats()
		if werr := c.write(); werr != nil || err != nil || quit {
			return
		}
		if c.subscribe && c.s.opts.Stream { // the SUBACK is out: start streaming
			c.subscribe = false
			c.wmu.Lock()
			c.streaming = true
			c.wmu.Unlock()
			c.s.wg.Add(1)
			go newStreamer(c).run()
		}
	}
}

// write sends c.out, or hands it to the running stream, waiting while the stream has more than
// maxPending bytes of replies it could not write yet.
func (c *conn) write() error {
	if len(c.out) == 0 {
		return nil
	}
	c.wmu.Lock()
	for c.streaming && len(c.pending) >= maxPending {
		c.drained.Wait()
	}
	if c.streaming {
		c.pending = append(c.pending, c.out...)
		c.wmu.Unlock()
		c.out = c.out[:0]
		select {
		case c.wake <- struct{}{}:
		default:
		}
		return nil
	}
	c.wmu.Unlock()
	_, err := c.nc.Write(c.out)
	c.out = c.out[:0]
	return err
}

// process handles every complete packet at the start of in, appending replies to c.out, and
// returns the number of bytes used. quit reports a DISCONNECT; after it and after an error the
// connection must be closed once c.out is written.
func (c *conn) process(in []byte) (used int, quit bool, err error) {
	for {
		h, body, n, err := codec.Split(in[used:], 0)
		if err != nil || n == 0 {
			return used, false, err
		}
		used += n
		if quit, err = c.handle(h, body); err != nil || quit {
			return used, quit, err
		}
	}
}

func (c *conn) handle(h codec.Header, body []byte) (quit bool, err error) {
	if !c.connected {
		if h.Type != codec.TypeConnect {
			return false, errProtocol // [MQTT-3.1.0-1]
		}
		return false, c.handleConnect(body)
	}
	switch h.Type {
	case codec.TypePublish:
		if err := codec.DecodePublish(h, body, c.v, &c.pub); err != nil {
			return false, err
		}
		c.received[c.pub.QoS]++
		switch c.pub.QoS {
		case 1:
			c.reply.ID = c.pub.ID
			c.out = codec.AppendPuback(c.out, &c.reply, c.v)
			c.acks++
		case 2:
			c.reply.ID = c.pub.ID
			c.out = codec.AppendPubrec(c.out, &c.reply, c.v)
			c.acks++
		}
	case codec.TypePubrel:
		if err := codec.DecodePubrel(body, c.v, &c.ack); err != nil {
			return false, err
		}
		c.reply.ID = c.ack.ID
		c.out = codec.AppendPubcomp(c.out, &c.reply, c.v)
		c.acks++
	case codec.TypePuback, codec.TypePubrec, codec.TypePubcomp:
		// The server sends QoS 0 only, so a client has nothing to acknowledge; it is ignored.
		return false, codec.DecodePuback(body, c.v, &c.ack)
	case codec.TypeSubscribe:
		return false, c.handleSubscribe(body)
	case codec.TypeUnsubscribe:
		if err := codec.DecodeUnsubscribe(body, c.v, &c.unsub); err != nil {
			return false, err
		}
		c.unsuback.ID = c.unsub.ID
		c.unsuback.Reasons = c.unsuback.Reasons[:0]
		if c.v == codec.V5 {
			for range c.unsub.Filters {
				c.unsuback.Reasons = append(c.unsuback.Reasons, codec.ReasonSuccess)
			}
		}
		c.out = codec.AppendUnsuback(c.out, &c.unsuback, c.v)
	case codec.TypePingreq:
		if err := codec.DecodePingreq(body); err != nil {
			return false, err
		}
		c.out = codec.AppendPingresp(c.out)
	case codec.TypeDisconnect:
		return true, codec.DecodeDisconnect(body, c.v, &c.disc)
	default: // CONNECT again [MQTT-3.1.0-2], server-to-client packets, AUTH
		return false, errProtocol
	}
	return false, nil
}

func (c *conn) handleConnect(body []byte) error {
	v, err := codec.DecodeConnect(body, &c.connect)
	if err != nil {
		return err
	}
	c.v, c.connected = v, true
	c.connack = codec.Connack{}
	if v == codec.V5 && len(c.connect.ClientID) == 0 {
		// [MQTT-3.2.2-16] a 5.0 client that sent no identifier is given one.
		c.connack.Props.AssignedClientID = strconv.AppendUint([]byte("fastbroker-"), c.s.connections.Load()+c.conns+1, 10)
		c.connack.Props.Set(codec.PropAssignedClientID)
	}
	c.out = codec.AppendConnack(c.out, &c.connack, v)
	c.conns++
	return nil
}

func (c *conn) handleSubscribe(body []byte) error {
	if err := codec.DecodeSubscribe(body, c.v, &c.sub); err != nil {
		return err
	}
	c.suback.ID = c.sub.ID
	c.suback.Reasons = c.suback.Reasons[:0]
	for i := range c.sub.Filters {
		// Granted QoS n is reason code n in both versions.
		c.suback.Reasons = append(c.suback.Reasons, codec.ReasonCode(c.sub.Filters[i].QoS))
	}
	c.out = codec.AppendSuback(c.out, &c.suback, c.v)
	if c.topic == nil {
		c.topic = topicFor(c.sub.Filters[0].Filter)
		c.subscribe = true
	}
	return nil
}

func (c *conn) flushStats() {
	s := c.s
	if c.conns > 0 {
		s.connections.Add(c.conns)
		c.conns = 0
	}
	for q, n := range c.received {
		if n > 0 {
			s.received[q].Add(n)
			c.received[q] = 0
		}
	}
	if c.acks > 0 {
		s.acks.Add(c.acks)
		c.acks = 0
	}
}
