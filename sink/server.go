package sink

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/panjf2000/gnet/v2"
	"golang.org/x/sys/unix"
)

// Defaults of Config's zero fields.
const (
	DefaultReceiveMaximum = 65535
	DefaultMaxPacketSize  = 1 << 20  // bytes, whole packet
	DefaultMaxOutput      = 1 << 20  // bytes of unsent output per connection
	DefaultMaxHeld        = 64 << 20 // bytes held for cut packets, over all of a process's connections
	// readBufferCap is gnet's read buffer, one per event loop (not per connection).
	readBufferCap = 64 << 10
	// writeBufferCap is the static part of gnet's per-connection outbound buffer, allocated
	// only when the socket does not take a whole write.
	writeBufferCap = 4 << 10
	// keepOutput is the largest relay buffer a connection keeps between flushes.
	keepOutput = 64 << 10
)

// ErrNotLoopback is returned by Start for an address that is not a loopback address when
// Config.AllowRemote is not set.
var ErrNotLoopback = errors.New("sink: listen address is not loopback")

// Config configures a Server. The zero value listens on a free loopback port.
type Config struct {
	// Addr is host:port to listen on; empty means "127.0.0.1:0" (port 0 picks a free one).
	Addr string
	// AllowRemote permits an address that is not loopback.
	AllowRemote bool
	// SharePort lets other processes of the same user listen on the same port (mqblast sink
	// --procs). The listener always has SO_REUSEPORT, because only then does gnet accept on
	// the event loop itself instead of handing each connection over from an accepting
	// thread; without SharePort, Start first makes sure that nobody listens on a fixed port.
	SharePort bool
	// ReceiveMaximum is the 5.0 CONNACK Receive Maximum; 0 means DefaultReceiveMaximum.
	ReceiveMaximum uint16
	// TopicAliasMaximum is the 5.0 CONNACK Topic Alias Maximum: how many aliases a client may
	// set on its PUBLISH packets. 0 means none.
	TopicAliasMaximum uint16
	// MaxPacketSize is the largest packet accepted (and the 5.0 CONNACK Maximum Packet Size),
	// fixed header included; 0 means DefaultMaxPacketSize. A larger packet closes the connection.
	MaxPacketSize int
	// MaxOutput bounds a connection's unsent bytes (in the sink and in gnet's buffer); a copy
	// that would pass it is dropped and counted in Stats.Dropped.OutputFull. 0 means
	// DefaultMaxOutput.
	MaxOutput int
	// MaxHeld bounds the bytes held, over all connections, for packets that have not arrived
	// whole (a packet cut by a read waits in gnet's buffer for the rest): a connection whose
	// cut packet takes them past it is closed (a 5.0 client first gets a DISCONNECT Quota
	// exceeded) and counted in Stats.HeldOver. 0 means DefaultMaxHeld; it is at least
	// MaxPacketSize, so that a packet of any accepted size can arrive.
	MaxHeld int
	// MaxConnections refuses connections beyond this many open ones; 0 means what the
	// descriptor limit lets the process hold (PerProcess): a connection accepted past it is
	// closed at once, so that an accept never fails for want of a descriptor (gnet ends the
	// event loop, and every connection with it, when one does).
	MaxConnections int
	// FlushDelay is the shortest time between two flushes of the relay buffers: 0 writes them
	// out at the end of the event loop's current round of ready sockets; with a delay a copy
	// waits at most that long (none after a quiet spell), and at high rates each write carries
	// more copies (fewer syscalls) at that cost in latency.
	FlushDelay time.Duration
	// LockOSThread pins the event loop to an OS thread; on Linux Stats then reports its CPU time.
	LockOSThread bool
	// TLS, when not nil, makes the sink speak MQTT over TLS 1.3 (LoadTLS builds it): each
	// handshake runs in a goroutine off the event loop, then the loop opens and seals the
	// connection's records itself.
	TLS *tls.Config
	// WS makes the sink speak MQTT over WebSocket (with TLS: wss): each connection's first
	// bytes are an HTTP/1.1 upgrade request for WSPath, then binary frames.
	WS bool
	// WSPath is the path the upgrade is served on; empty means DefaultWSPath.
	WSPath string
	// Turn, with Procs above 1, makes this process one of a --procs parent's that take the
	// port's new connections in turns (Linux).
	Turn Turn
}

// Turn places a process among a --procs parent's that share a port and take its new
// connections in turns, in the order they began to listen: the kernel gives every new
// connection to the process whose turn it is (a program on the port's SO_REUSEPORT
// group), and a process that holds Fill open connections passes the turn to the next, the
// last to the first, so that what comes after the shares (reconnects after a storm) goes
// to the processes with room. One process accepting at the whole rate wakes once for many
// accepts, where fifty sharing the rate by hash wake for one or two each. Procs of 0 or 1:
// no turns.
type Turn struct {
	Index, Procs, Fill int
}

// ParseTurn reads a Turn written by Turn.String ("index/procs/fill").
func ParseTurn(s string) (Turn, error) {
	var t Turn
	if _, err := fmt.Sscanf(s, "%d/%d/%d", &t.Index, &t.Procs, &t.Fill); err != nil ||
		t.Procs < 0 || t.Index < 0 || (t.Procs > 1 && (t.Index >= t.Procs || t.Fill < 1)) {
		return Turn{}, fmt.Errorf("turn %q: want index/procs/fill, the index below procs and fill at least 1", s)
	}
	return t, nil
}

func (t Turn) String() string { return fmt.Sprintf("%d/%d/%d", t.Index, t.Procs, t.Fill) }

func (c *Config) fill() {
	if c.Addr == "" {
		c.Addr = "127.0.0.1:0"
	}
	if c.ReceiveMaximum == 0 {
		c.ReceiveMaximum = DefaultReceiveMaximum
	}
	if c.MaxPacketSize <= 0 {
		c.MaxPacketSize = DefaultMaxPacketSize
	}
	if c.MaxOutput <= 0 {
		c.MaxOutput = DefaultMaxOutput
	}
	if c.MaxHeld <= 0 {
		c.MaxHeld = DefaultMaxHeld
	}
	c.MaxHeld = max(c.MaxHeld, c.MaxPacketSize)
	if c.WSPath == "" {
		c.WSPath = DefaultWSPath
	}
}

// CheckAddr reports whether addr may be listened on: a loopback address, or any address with
// allowRemote.
func CheckAddr(addr string, allowRemote bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("cannot listen on %q: %w", addr, err)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("cannot listen on %q: port %q is not a number from 0 to 65535", addr, port)
	}
	if allowRemote || host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("cannot listen on %q: %w", addr, ErrNotLoopback)
	}
	return nil
}

// Server is a running sink. Its methods are safe for concurrent use.
type Server struct {
	cfg  Config
	addr string
	eng  gnet.Engine
	h    *handler
	done chan struct{} // closed when gnet.Run returns
	err  error         // gnet.Run's error, valid after done

	closeOnce sync.Once
	closeErr  error
}

// Start listens on cfg.Addr and serves until Close or until ctx is done. It refuses an address
// that is not loopback unless cfg.AllowRemote (ErrNotLoopback).
func Start(ctx context.Context, cfg Config) (*Server, error) {
	cfg.fill()
	if err := CheckAddr(cfg.Addr, cfg.AllowRemote); err != nil {
		return nil, err
	}
	if !cfg.SharePort {
		if err := portFree(cfg.Addr); err != nil {
			return nil, err
		}
	}
	h := newHandler(&cfg)
	s := &Server{cfg: cfg, h: h, done: make(chan struct{})}
	booted := make(chan struct{})
	h.boot = func(eng gnet.Engine) {
		s.eng = eng
		s.addr = boundAddr(eng)
		h.startTurn(eng)
		close(booted)
	}
	go func() {
		s.err = gnet.Run(h, "tcp://"+cfg.Addr,
			gnet.WithNumEventLoop(1), // one loop per process: the relay needs no lock (doc.go)
			gnet.WithReusePort(true), // accept on the loop itself (SharePort)
			gnet.WithReuseAddr(true), // restart on the same port while its old connections are in TIME_WAIT (a study restarts it per cell)
			gnet.WithReadBufferCap(readBufferCap),
			gnet.WithWriteBufferCap(writeBufferCap),
			gnet.WithLockOSThread(cfg.LockOSThread),
			gnet.WithTCPNoDelay(gnet.TCPNoDelay),
			gnet.WithLogger(quiet{}))
		close(s.done)
	}()
	select {
	case <-booted:
	case <-s.done:
		return nil, fmt.Errorf("cannot listen on %s: %w", cfg.Addr, s.err)
	}
	if ctx.Done() != nil {
		go func() {
			select {
			case <-ctx.Done():
				_ = s.Close()
			case <-s.done:
			}
		}()
	}
	return s, nil
}

// portFree fails if something already listens on addr's port (port 0 is always free).
func portFree(addr string) error {
	if _, port, _ := net.SplitHostPort(addr); port == "0" {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("cannot listen on %s: %w", addr, err)
	}
	return ln.Close()
}

// boundAddr returns the address the engine's listener is bound to, as host:port.
func boundAddr(eng gnet.Engine) string {
	fd, err := eng.Dup()
	if err != nil {
		return ""
	}
	defer unix.Close(fd) //nolint:errcheck
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return ""
	}
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return net.JoinHostPort(net.IP(a.Addr[:]).String(), strconv.Itoa(a.Port))
	case *unix.SockaddrInet6:
		return net.JoinHostPort(net.IP(a.Addr[:]).String(), strconv.Itoa(a.Port))
	}
	return ""
}

// Addr returns the address the server listens on, as host:port.
func (s *Server) Addr() string { return s.addr }

// Stats returns the server's counters.
func (s *Server) Stats() Stats {
	st := s.h.c.stats()
	st.LoopCPU = s.h.loopCPU()
	return st
}

// Close stops the server, closing every connection, and waits until its event loop has
// returned. Calling it again does nothing.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.eng.Stop(ctx); err != nil {
			s.closeErr = fmt.Errorf("cannot stop the sink on %s: %w", s.addr, err)
		}
		<-s.done
		s.h.stopFlusher()
	})
	return s.closeErr
}

// quiet is gnet's logger: the sink reports through its counters, not a log.
type quiet struct{}

func (quiet) Debugf(string, ...any) {}
func (quiet) Infof(string, ...any)  {}
func (quiet) Warnf(string, ...any)  {}
func (quiet) Errorf(string, ...any) {}
func (quiet) Fatalf(string, ...any) {}
