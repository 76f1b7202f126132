package floor

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mqblast/mqblast/codec"
	"github.com/mqblast/mqblast/internal/epoll"
	"github.com/mqblast/mqblast/reactor"
)

// setupTimeout bounds each blocking step of a client's set-up.
const setupTimeout = 10 * time.Second

// setup connects the loop's clients one after the other with blocking system calls:
// socket, connect, CONNECT, CONNACK, SUBSCRIBE, SUBACK; then each socket goes non-blocking
// into the loop's epoll set and its publisher, if any, gets its pre-encoded PUBLISH.
func (l *loop) setup() error {
	ec := &l.f.cfg.Engine
	for i := l.idx; i < ec.Clients; i += len(l.f.loops) {
		spec := ec.Client(i)
		if err := l.connect(i, &spec); err != nil {
			return fmt.Errorf("floor: client %d (%s): %w", i, spec.ID, err)
		}
	}
	return nil
}

// connect sets up client i.
func (l *loop) connect(i int, spec *reactor.ClientSpec) error {
	if spec.Version != 3 && spec.Version != 4 && spec.Version != 5 {
		return fmt.Errorf("protocol level %d: the floor speaks 3 (3.1), 4 (3.1.1) and 5", spec.Version)
	}
	if sp := spec.Publish; sp != nil && sp.RandN > 0 {
		return errors.New("%rand_N topics are not supported by the floor: use a fixed topic")
	}
	dst := l.brokers[spec.Broker%len(l.brokers)]
	family := unix.AF_INET
	if _, ok := dst.(*unix.SockaddrInet6); ok {
		family = unix.AF_INET6
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	c := &conn{fd: fd, version: spec.Version, keepalive: int64(spec.Keepalive), slot: int32(len(l.conns))}
	l.conns = append(l.conns, c) // closeAll closes it whatever happens next
	tv := unix.NsecToTimeval(int64(setupTimeout))
	for _, o := range []struct{ level, opt, v int }{
		{unix.IPPROTO_TCP, unix.TCP_NODELAY, 1},
		{unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1},
	} {
		if err := unix.SetsockoptInt(fd, o.level, o.opt, o.v); err != nil {
			return fmt.Errorf("setsockopt: %w", err)
		}
	}
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv)
	if spec.Source.IsValid() {
		if err := unix.SetsockoptInt(fd, unix.SOL_IP, unix.IP_BIND_ADDRESS_NO_PORT, 1); err != nil {
			return fmt.Errorf("setsockopt IP_BIND_ADDRESS_NO_PORT: %w", err)
		}
		if err := unix.Bind(fd, epoll.Sockaddr(netip.AddrPortFrom(spec.Source, 0))); err != nil {
			return fmt.Errorf("bind %v: %w", spec.Source, err)
		}
	}
	if err := unix.Connect(fd, dst); err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	v := codec.Version(spec.Version)
	if err := writeAll(fd, reactor.AppendConnect(nil, spec, l.f.maxIn)); err != nil {
		return fmt.Errorf("write CONNECT: %w", err)
	}
	h, body, err := c.readPacket()
	if err != nil {
		return fmt.Errorf("read CONNACK: %w", err)
	}
	var ca codec.Connack
	if h.Type != codec.TypeConnack {
		return fmt.Errorf("got %v before the CONNACK", h.Type)
	}
	if err := codec.DecodeConnack(body, v, &ca); err != nil {
		return fmt.Errorf("CONNACK: %w", err)
	}
	if ca.Reason != 0 {
		return fmt.Errorf("CONNACK refused the connection: reason 0x%02x", byte(ca.Reason))
	}
	if v == codec.V5 && ca.Props.Has(codec.PropServerKeepAlive) {
		c.keepalive = int64(time.Duration(ca.Props.ServerKeepAlive) * time.Second)
	}
	if len(spec.Subscriptions) > 0 {
		sub := codec.Subscribe{ID: 1, Filters: spec.Subscriptions}
		if err := writeAll(fd, codec.AppendSubscribe(nil, &sub, v)); err != nil {
			return fmt.Errorf("write SUBSCRIBE: %w", err)
		}
		h, body, err := c.readPacket()
		if err != nil {
			return fmt.Errorf("read SUBACK: %w", err)
		}
		var sa codec.Suback
		if h.Type != codec.TypeSuback {
			return fmt.Errorf("got %v before the SUBACK", h.Type)
		}
		if err := codec.DecodeSuback(body, v, &sa); err != nil {
			return fmt.Errorf("SUBACK: %w", err)
		}
		for k, r := range sa.Reasons {
			if r >= 0x80 {
				return fmt.Errorf("SUBACK refused %q: reason 0x%02x", spec.Subscriptions[k].Filter, byte(r))
			}
		}
	}
	if sp := spec.Publish; sp != nil {
		aliasMax := 0
		if v == codec.V5 && ca.Props.Has(codec.PropTopicAliasMaximum) {
			aliasMax = int(ca.Props.TopicAliasMaximum)
		}
		l.pubs = append(l.pubs, newPub(c, sp, v, aliasMax))
		c.pub = l.pubs[len(l.pubs)-1]
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		return fmt.Errorf("set non-blocking: %w", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(fd), Pad: c.slot}
	if err := unix.EpollCtl(l.ep, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		return fmt.Errorf("epoll_ctl: %w", err)
	}
	c.lastWrite = l.f.now()
	return nil
}

// readPacket reads one whole packet during set-up (blocking); bytes after it stay in c.in.
func (c *conn) readPacket() (codec.Header, []byte, error) {
	var buf [4096]byte
	for {
		if len(c.in) > 0 {
			h, body, n, err := codec.Split(c.in, 1<<20)
			if err != nil {
				return h, nil, err
			}
			if n > 0 {
				b := append([]byte(nil), body...)
				c.in = append(c.in[:0], c.in[n:]...)
				return h, b, nil
			}
		}
		n, err := unix.Read(c.fd, buf[:])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return codec.Header{}, nil, err
		}
		if n == 0 {
			return codec.Header{}, nil, errors.New("closed by the broker")
		}
		c.in = append(c.in, buf[:n]...)
	}
}

// writeAll writes b on a blocking socket.
func writeAll(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := unix.Write(fd, b)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// newPub pre-encodes sp's PUBLISH for connection c as the engine would send it on a
// connection whose broker takes aliasMax topic aliases: the whole topic (with alias 1 when
// aliases are used) for the first message, then only the alias. The payload is zeros of
// the spec's size; only the packet id changes from message to message.
func newPub(c *conn, sp *reactor.PublishSpec, v codec.Version, aliasMax int) *pub {
	alias := aliasMax >= 1 && !sp.NoTopicAlias && sp.RandN == 0
	pk := codec.Publish{QoS: codec.QoS(sp.QoS), Retain: sp.Retain, Topic: sp.Topic,
		Payload: make([]byte, sp.PayloadSize)}
	if sp.Props != nil && v == codec.V5 {
		pk.Props = *sp.Props
	}
	if alias {
		pk.Props.Set(codec.PropTopicAlias)
		pk.Props.TopicAlias = 1
	}
	if pk.QoS > 0 {
		pk.ID = 1
	}
	p := &pub{c: c, heapIdx: -1, pidAt: -1, firstPidAt: -1,
		interval: int64(float64(time.Second) / sp.Rate), phase: int64(sp.Phase), count: int64(sp.Count)}
	p.first = codec.AppendPublish(nil, &pk, v)
	if pk.QoS > 0 {
		p.firstPidAt = fixedHeaderLen(p.first) + 2 + len(pk.Topic)
	}
	p.tmpl = p.first
	p.pidAt = p.firstPidAt
	if alias {
		pk.Topic = nil
		p.tmpl = codec.AppendPublish(nil, &pk, v)
		if pk.QoS > 0 {
			p.pidAt = fixedHeaderLen(p.tmpl) + 2
		}
	}
	return p
}

// fixedHeaderLen returns the length of the fixed header at the start of a whole packet.
func fixedHeaderLen(b []byte) int {
	i := 1
	for b[i]&0x80 != 0 {
		i++
	}
	return i + 1
}
