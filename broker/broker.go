// Package broker runs the embedded MQTT broker (github.com/mochi-mqtt/server/v2) that first
// runs and tests use when no broker is given. It allows every client and listens on
// loopback only: it is a convenience, not a broker to benchmark.
package broker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/auth"
	"github.com/mochi-mqtt/server/v2/listeners"
)

// Broker is a running embedded broker.
type Broker struct {
	srv  *mqtt.Server
	addr string
}

// Start listens on addr (host:port on loopback: an address, or a name whose addresses are
// all loopback, such as localhost; port 0 picks a free one) and serves MQTT 3.1.1 and 5.0
// to every client until Close. log receives the broker's warnings (nil: none).
func Start(addr string, log io.Writer) (*Broker, error) { return start(addr, log, false) }

// StartPrivate is Start on any address, for a private network namespace that only its peer
// namespaces reach (the study's packet emulator, tuning/netemu): there the broker cannot
// listen on loopback, which the clients in the other namespace do not share.
func StartPrivate(addr string, log io.Writer) (*Broker, error) { return start(addr, log, true) }

func start(addr string, log io.Writer, private bool) (*Broker, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return nil, fmt.Errorf("listen address %q: want host:port, e.g. 127.0.0.1:1883 or localhost:1883", addr)
	}
	ip, err := netip.ParseAddr(host)
	ips := []netip.Addr{ip}
	if err != nil { // a name, such as localhost
		if ips, err = net.DefaultResolver.LookupNetIP(context.Background(), "ip", host); err != nil {
			return nil, fmt.Errorf("listen address %q: cannot resolve %q: %w", addr, host, err)
		}
	}
	for _, a := range ips {
		if a = a.Unmap(); a.IsLoopback() || private {
			continue
		}
		if a.String() != host {
			return nil, fmt.Errorf("listen address %q: %s resolves to %s, not loopback: the embedded broker listens on loopback only (127.0.0.0/8 or ::1)", addr, host, a)
		}
		return nil, fmt.Errorf("listen address %q: the embedded broker listens on loopback only (127.0.0.0/8 or ::1)", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on %s: %w", addr, err)
	}
	if log == nil {
		log = io.Discard
	}
	opts := &mqtt.Options{
		InlineClient: false,
		Logger:       slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	srv := mqtt.New(opts)
	if err := srv.AddHook(new(auth.AllowHook), nil); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("cannot configure the embedded broker: %w", err)
	}
	if err := srv.AddListener(listeners.NewNet("tcp", ln)); err != nil {
		return nil, fmt.Errorf("cannot listen on %s: %w", ln.Addr(), err)
	}
	if err := srv.Serve(); err != nil {
		return nil, fmt.Errorf("cannot start the embedded broker: %w", err)
	}
	return &Broker{srv: srv, addr: ln.Addr().String()}, nil
}

// Addr returns the address the broker listens on.
func (b *Broker) Addr() string { return b.addr }

// Close stops the broker and closes every client connection.
func (b *Broker) Close() error { return b.srv.Close() }
