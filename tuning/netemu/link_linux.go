package netemu

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/mqblast/mqblast/tuning"
)

// MACs of the namespace ends, fixed so that the neighbour entries need no lookup.
const (
	brokerMAC = "02:6d:71:62:00:01"
	clientMAC = "02:6d:71:62:00:02"
)

var linkSeq atomic.Int64

// Link is a running emulator between a broker namespace and a client namespace.
type Link struct {
	id          string
	b, c, e     string
	clientAddrs []netip.Addr
	prof        atomic.Pointer[tuning.Profile]
	br          *bridge
	done        chan struct{}
	closeOnce   sync.Once
	closeErr    error
}

// Start creates the namespaces and the veths, and starts the emulator with cfg.Profile. On
// error it removes what it made. Call Close when done (also on Ctrl-C: the caller owns the
// signal handling); a process that dies without it leaves namespaces that Leftovers finds.
func Start(cfg Config) (*Link, error) {
	if err := cfg.Profile.Validate(); err != nil {
		return nil, fmt.Errorf("netemu: %w", err)
	}
	if cfg.ClientAddrs == 0 {
		cfg.ClientAddrs = 1
	}
	if cfg.ClientAddrs < 0 || cfg.ClientAddrs > MaxClientAddrs {
		return nil, fmt.Errorf("netemu: %d client addresses: want 1 to %d", cfg.ClientAddrs, MaxClientAddrs)
	}
	if cfg.QueueFrames == 0 {
		cfg.QueueFrames = 8192
	}
	if cfg.QueueFrames < 16 || cfg.QueueFrames > 1<<20 {
		return nil, fmt.Errorf("netemu: queue of %d frames: want 16 to %d", cfg.QueueFrames, 1<<20)
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("netemu: the packet emulator creates network namespaces and needs root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return nil, fmt.Errorf("netemu: ip(8) not found (apt-get install iproute2): %w", err)
	}
	id := strconv.Itoa(os.Getpid())
	if n := linkSeq.Add(1); n > 1 {
		id += "." + strconv.FormatInt(n, 10)
	}
	l := &Link{id: id, b: "mqb-" + id + "-b", c: "mqb-" + id + "-c", e: "mqb-" + id + "-e", done: make(chan struct{})}
	p := cfg.Profile
	l.prof.Store(&p)
	addr := FirstClientAddr
	for range cfg.ClientAddrs {
		l.clientAddrs = append(l.clientAddrs, addr)
		addr = addr.Next()
	}
	if err := l.setup(); err != nil {
		_ = Remove([]string{l.b, l.c, l.e})
		return nil, err
	}
	bfd, cfd, err := openPackets(l.e)
	if err != nil {
		_ = Remove([]string{l.b, l.c, l.e})
		return nil, err
	}
	br, err := newBridge(&l.prof, bfd, cfd, cfg)
	if err != nil {
		_ = Remove([]string{l.b, l.c, l.e})
		return nil, err
	}
	l.br = br
	go func() {
		defer close(l.done)
		br.run()
	}()
	return l, nil
}

func (l *Link) setup() error {
	for _, ns := range []string{l.b, l.c, l.e} {
		if _, err := os.Stat("/run/netns/" + ns); err == nil {
			return fmt.Errorf("netemu: network namespace %s exists already: remove it with 'mqblast net clear'", ns)
		}
	}
	cmds := [][]string{
		{"ip", "netns", "add", l.b},
		{"ip", "netns", "add", l.c},
		{"ip", "netns", "add", l.e},
		{"ip", "-n", l.e, "link", "add", "tob", "type", "veth", "peer", "name", "mqb0", "netns", l.b},
		{"ip", "-n", l.e, "link", "add", "toc", "type", "veth", "peer", "name", "mqb0", "netns", l.c},
		{"ip", "-n", l.b, "link", "set", "mqb0", "address", brokerMAC, "addrgenmode", "none"},
		{"ip", "-n", l.c, "link", "set", "mqb0", "address", clientMAC, "addrgenmode", "none"},
		{"ip", "-n", l.e, "link", "set", "tob", "addrgenmode", "none", "promisc", "on"},
		{"ip", "-n", l.e, "link", "set", "toc", "addrgenmode", "none", "promisc", "on"},
		{"ip", "-n", l.b, "addr", "add", BrokerAddr.String() + "/16", "dev", "mqb0"},
	}
	for _, a := range l.clientAddrs {
		cmds = append(cmds,
			[]string{"ip", "-n", l.c, "addr", "add", a.String() + "/16", "dev", "mqb0"},
			[]string{"ip", "-n", l.b, "neigh", "replace", a.String(), "lladdr", clientMAC, "dev", "mqb0", "nud", "permanent"})
	}
	cmds = append(cmds,
		[]string{"ip", "-n", l.c, "neigh", "replace", BrokerAddr.String(), "lladdr", brokerMAC, "dev", "mqb0", "nud", "permanent"})
	if err := tuning.RunCommands(cmds, false); err != nil {
		return fmt.Errorf("netemu: cannot set up the namespaces: %w", err)
	}
	for _, x := range []struct{ ns, dev string }{{l.b, "mqb0"}, {l.c, "mqb0"}, {l.e, "tob"}, {l.e, "toc"}} {
		if err := inNS(x.ns, func() error { return offloadsOff(x.dev) }); err != nil {
			return fmt.Errorf("netemu: cannot turn the offloads of %s in %s off: %w", x.dev, x.ns, err)
		}
	}
	return tuning.RunCommands([][]string{
		{"ip", "-n", l.b, "link", "set", "lo", "up"},
		{"ip", "-n", l.c, "link", "set", "lo", "up"},
		{"ip", "-n", l.e, "link", "set", "tob", "up"},
		{"ip", "-n", l.e, "link", "set", "toc", "up"},
		{"ip", "-n", l.b, "link", "set", "mqb0", "up"},
		{"ip", "-n", l.c, "link", "set", "mqb0", "up"},
	}, false)
}

// offloadsOff turns off checksum offload, scatter-gather, TSO, GSO and GRO on dev, in the
// calling thread's namespace, with the legacy ethtool ioctls (no ethtool(8) needed). With
// checksum offload on, a frame read from a veth would carry a partial checksum the other
// side rejects; with segmentation offloads on, one frame could be 64 KiB of segments.
func offloadsOff(dev string) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	for _, cmd := range []uint32{unix.ETHTOOL_SGRO, unix.ETHTOOL_SGSO, unix.ETHTOOL_STSO, unix.ETHTOOL_SSG, unix.ETHTOOL_STXCSUM} {
		val := struct{ cmd, data uint32 }{cmd, 0}
		var ifr struct {
			name [unix.IFNAMSIZ]byte
			data unsafe.Pointer
			_    [16]byte
		}
		copy(ifr.name[:], dev)
		ifr.data = unsafe.Pointer(&val)
		if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr))); e != 0 {
			return fmt.Errorf("ethtool ioctl %#x: %w", cmd, e)
		}
		runtime.KeepAlive(&val)
	}
	return nil
}

// inNS runs fn on a new OS thread moved into the named network namespace. The thread is
// never moved back: the goroutine ends locked, so the runtime discards the thread.
func inNS(ns string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		f, err := os.Open("/run/netns/" + ns)
		if err != nil {
			errc <- fmt.Errorf("netemu: network namespace %s: %w", ns, err)
			return
		}
		err = unix.Setns(int(f.Fd()), unix.CLONE_NEWNET)
		_ = f.Close()
		if err != nil {
			errc <- fmt.Errorf("netemu: cannot enter network namespace %s: %w", ns, err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// ID is the link's id: its namespaces are mqb-<id>-b, mqb-<id>-c and mqb-<id>-e.
func (l *Link) ID() string { return l.id }

// BrokerNS is the broker namespace's name (for `ip netns exec`).
func (l *Link) BrokerNS() string { return l.b }

// ClientNS is the client namespace's name.
func (l *Link) ClientNS() string { return l.c }

// BrokerAddr is the broker namespace's address, for the broker to listen on and the client
// to dial.
func (l *Link) BrokerAddr() netip.Addr { return BrokerAddr }

// ClientAddrs are the client namespace's addresses (Config.ClientAddrs of them), for --bind.
func (l *Link) ClientAddrs() []netip.Addr { return l.clientAddrs }

// Profile is the profile in force.
func (l *Link) Profile() tuning.Profile { return *l.prof.Load() }

// SetProfile changes the profile; frames already queued keep their due times. Safe for
// concurrent use.
func (l *Link) SetProfile(p tuning.Profile) error {
	if err := p.Validate(); err != nil {
		return fmt.Errorf("netemu: %w", err)
	}
	l.prof.Store(&p)
	return nil
}

// Stats is what the emulator did so far. Safe for concurrent use.
func (l *Link) Stats() Stats { return l.br.stats() }

// BrokerCommand is name with args under `ip netns exec` in the broker namespace; the caller
// starts and waits for it. Close kills it if it still runs.
func (l *Link) BrokerCommand(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", l.b, name}, args...)...)
}

// ClientCommand is name with args under `ip netns exec` in the client namespace (the way to
// run mqblast itself as the client: its event loops' sockets then belong to the namespace).
func (l *Link) ClientCommand(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", l.c, name}, args...)...)
}

// InBroker runs fn on an OS thread of its own in the broker namespace: sockets fn creates
// belong to that namespace and stay usable from any goroutine afterwards.
func (l *Link) InBroker(fn func() error) error { return inNS(l.b, fn) }

// InClient runs fn on an OS thread of its own in the client namespace.
func (l *Link) InClient(fn func() error) error { return inNS(l.c, fn) }

// Listen listens on addr (host:port, host BrokerAddr or empty) in the broker namespace.
func (l *Link) Listen(ctx context.Context, network, addr string) (net.Listener, error) {
	var ln net.Listener
	err := l.InBroker(func() error {
		var err error
		ln, err = (&net.ListenConfig{}).Listen(ctx, network, addr)
		return err
	})
	return ln, err
}

// Dial dials addr (normally BrokerAddr:port) from the client namespace.
func (l *Link) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var c net.Conn
	err := l.InClient(func() error {
		var err error
		c, err = (&net.Dialer{}).DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

// Close stops the emulator, kills every process still in the link's namespaces and deletes
// them. It is safe to call more than once.
func (l *Link) Close() error {
	l.closeOnce.Do(func() {
		l.br.stop()
		<-l.done
		l.br.close()
		l.closeErr = Remove([]string{l.b, l.c, l.e})
	})
	return l.closeErr
}

// nsName matches the namespaces Start creates; group 1 is the owner's pid.
var nsName = regexp.MustCompile(`^mqb-([0-9]+)(\.[0-9]+)?-[bce]$`)

// Leftovers returns the namespaces Start created (mqb-<pid>[.<n>]-b, -c, -e) whose process
// is gone, or with all, every one of them, including those of running processes.
func Leftovers(all bool) ([]string, error) {
	ents, err := os.ReadDir("/run/netns")
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("netemu: cannot list network namespaces: %w", err)
	}
	var out []string
	for _, e := range ents {
		m := nsName.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		pid, _ := strconv.Atoi(m[1])
		if all || !Alive(pid) {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// Alive reports whether a process with pid exists: the owner of leftovers (namespaces, a
// run's temporary files) named after its pid is then taken as running.
func Alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// Remove kills the processes in each named namespace (SIGKILL) and deletes it; it goes on
// past failures and returns them joined. A namespace that is already gone is no error.
func Remove(names []string) error {
	var errs []error
	for _, ns := range names {
		if _, err := os.Stat("/run/netns/" + ns); errors.Is(err, os.ErrNotExist) {
			continue
		}
		for range 50 {
			out, err := exec.Command("ip", "netns", "pids", ns).Output()
			if err != nil || len(strings.TrimSpace(string(out))) == 0 {
				break
			}
			for _, f := range strings.Fields(string(out)) {
				if pid, err := strconv.Atoi(f); err == nil && pid != os.Getpid() {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
		if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("netemu: cannot delete network namespace %s: %w: %s", ns, err, strings.TrimSpace(string(out))))
		}
	}
	return errors.Join(errs...)
}
