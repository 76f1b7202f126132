//go:build !linux

package netemu

import (
	"context"
	"net"
	"net/netip"
	"os/exec"

	"github.com/mqblast/mqblast/tuning"
)

// Link is a running emulator; only on Linux.
type Link struct{}

// Start returns ErrUnsupported: the emulator needs Linux.
func Start(Config) (*Link, error) { return nil, ErrUnsupported }

// ID is the link's id.
func (*Link) ID() string { return "" }

// BrokerNS is the broker namespace's name.
func (*Link) BrokerNS() string { return "" }

// ClientNS is the client namespace's name.
func (*Link) ClientNS() string { return "" }

// BrokerAddr is the broker's address.
func (*Link) BrokerAddr() netip.Addr { return BrokerAddr }

// ClientAddrs are the client's addresses.
func (*Link) ClientAddrs() []netip.Addr { return nil }

// Profile is the profile in force.
func (*Link) Profile() tuning.Profile { return tuning.Profile{} }

// SetProfile changes the profile.
func (*Link) SetProfile(tuning.Profile) error { return ErrUnsupported }

// Stats is what the emulator did.
func (*Link) Stats() Stats { return Stats{} }

// BrokerCommand is a command in the broker namespace.
func (*Link) BrokerCommand(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, name, args...)
}

// ClientCommand is a command in the client namespace.
func (*Link) ClientCommand(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, name, args...)
}

// InBroker runs fn in the broker namespace.
func (*Link) InBroker(func() error) error { return ErrUnsupported }

// InClient runs fn in the client namespace.
func (*Link) InClient(func() error) error { return ErrUnsupported }

// Listen listens in the broker namespace.
func (*Link) Listen(context.Context, string, string) (net.Listener, error) {
	return nil, ErrUnsupported
}

// Dial dials from the client namespace.
func (*Link) Dial(context.Context, string, string) (net.Conn, error) { return nil, ErrUnsupported }

// Close stops the emulator.
func (*Link) Close() error { return nil }

// Leftovers lists namespaces of dead processes; only on Linux.
func Leftovers(bool) ([]string, error) { return nil, nil }

// Remove deletes namespaces; only on Linux.
func Remove([]string) error { return ErrUnsupported }

// Alive reports whether a process with pid exists; here every one is taken as running.
func Alive(int) bool { return true }
