package fastbroker

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
)

// ErrNotLoopback is returned by Start for a listen address that is not a loopback address.
var ErrNotLoopback = errors.New("fastbroker: listen address is not loopback")

// Options configure a Server. The zero value answers every packet and streams nothing.
type Options struct {
	// Stream makes the server answer a connection's first SUBSCRIBE by streaming QoS 0 PUBLISH
	// packets to it after the SUBACK. Their topic is the first filter of that SUBSCRIBE with
	// every wildcard level replaced by "x" ("bench/#" gives "bench/x") and a "$share/group/"
	// prefix removed. Later SUBSCRIBEs and UNSUBSCRIBE do not change a stream; it ends after
	// StreamCount messages or with the connection.
	Stream bool
	// StreamRate is the number of messages per second streamed to each subscriber; 0 or less
	// means as fast as the socket takes them. Message k (from 0) is due at k/StreamRate after
	// the SUBACK; a subscriber that falls behind gets the late ones in one batch.
	StreamRate float64
	// StreamCount is the number of messages streamed to each subscriber; 0 means until the
	// connection closes.
	StreamCount int
	// Payload appends the payload of the streamed message with sequence number seq (0, 1, ...
	// per subscriber) to dst and returns the extended slice, as the codec's Append functions do.
	// It is called once per message from each subscriber's streaming goroutine, so it must be
	// safe for concurrent use, and it must not allocate if the benchmark is to stay clean. When
	// nil, every message carries the same 16-byte payload, DefaultPayload.
	Payload func(seq uint32, dst []byte) []byte
}

// DefaultPayload is the payload of streamed messages when Options.Payload is nil.
var DefaultPayload = []byte("fastbroker16byte")

// Stats are a Server's counters since Start.
type Stats struct {
	Connections uint64    // CONNECT packets answered with a CONNACK
	Received    [3]uint64 // PUBLISH packets received, indexed by QoS
	Acks        uint64    // PUBACK, PUBREC and PUBCOMP packets sent
	Streamed    uint64    // PUBLISH packets streamed to subscribers (written to their sockets)
}

// Server is a running fastbroker. Its methods are safe for concurrent use.
type Server struct {
	ln   net.Listener
	opts Options

	mu     sync.Mutex
	conns  map[*conn]struct{}
	closed bool
	wg     sync.WaitGroup

	connections atomic.Uint64
	received    [3]atomic.Uint64
	acks        atomic.Uint64
	streamed    atomic.Uint64
}

// Start listens on addr, a loopback host:port ("127.0.0.1:0", "[::1]:0" or "localhost:0";
// port 0 picks a free one), and serves connections until Close. It refuses any other address
// with ErrNotLoopback.
func Start(addr string, opts Options) (*Server, error) {
	if err := checkLoopback(addr); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on %q: %w", addr, err)
	}
	if a, ok := ln.Addr().(*net.TCPAddr); !ok || !a.IP.IsLoopback() {
		_ = ln.Close()
		return nil, fmt.Errorf("cannot listen on %q (bound %s): %w", addr, ln.Addr(), ErrNotLoopback)
	}
	s := &Server{ln: ln, opts: opts, conns: make(map[*conn]struct{})}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("cannot listen on %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("cannot listen on %q: %w", addr, ErrNotLoopback)
	}
	return nil
}

// Addr returns the address the server listens on, as host:port.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops listening, closes every connection and waits until all of the server's
// goroutines have returned. Calling it again does nothing and returns nil.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	err := s.ln.Close()
	for c := range s.conns {
		_ = c.nc.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	if err != nil {
		return fmt.Errorf("cannot close listener %s: %w", s.ln.Addr(), err)
	}
	return nil
}

// Stats returns the server's counters. Counts for a batch of packets are added before the
// replies to them are written, so a client that has its PINGRESP sees every packet it sent
// before the PINGREQ counted; Streamed grows after each write returns.
func (s *Server) Stats() Stats {
	return Stats{
		Connections: s.connections.Load(),
		Received:    [3]uint64{s.received[0].Load(), s.received[1].Load(), s.received[2].Load()},
		Acks:        s.acks.Load(),
		Streamed:    s.streamed.Load(),
	}
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return // closed
		}
		c := newConn(s, nc)
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			_ = nc.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go c.serve()
	}
}

func (s *Server) forget(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}
