package floor

import (
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mqblast/mqblast/internal/epoll"
)

// The keepalive floor: what holding an idle MQTT connection costs in system calls alone.
// A held connection of a Connections run does nothing but one PINGREQ from the client and
// one PINGRESP from the broker per keepalive interval, so the least CPU a client (or a
// broker) can spend per held connection-second is the CPU of one such exchange divided by
// the keepalive. Keepalive measures that exchange on Conns loopback TCP connections held
// by one process: a client thread writes one PINGREQ to every connection (one write(2)
// each) and reads the PINGRESPs as epoll reports them (one read(2) each); a server thread
// reads each PINGREQ and writes its PINGRESP. Each thread's own CPU time
// (CLOCK_THREAD_CPUTIME_ID) over Rounds such rounds, divided by the pings, is that side's
// CPU per exchange: epoll_wait is shared by every connection ready at once, as it is in a
// loop whose pings fall due together, so this is a floor, not what a spread schedule pays.

// KeepaliveConfig is a keepalive floor measurement.
type KeepaliveConfig struct {
	Conns  int // connections held
	Rounds int // ping rounds measured (after one that is not)
	// Sources are the client's source addresses (loopback); connection i binds
	// Sources[i%len]: one address has fewer local ports than a large Conns needs.
	// Empty: 127.0.0.2 to 127.0.0.41.
	Sources []netip.Addr
}

// KeepaliveResult is the floor's measurement: each side's CPU per PINGREQ/PINGRESP
// exchange, µs (divide by the keepalive in seconds for the CPU per held connection-second).
type KeepaliveResult struct {
	Conns           int     `json:"connections"`
	Rounds          int     `json:"rounds"`
	ClientUSPerPing float64 `json:"client_cpu_per_ping_us"`
	ServerUSPerPing float64 `json:"server_cpu_per_ping_us"`
	WallS           float64 `json:"wall_s"`
}

var pingresp = [2]byte{0xd0, 0}

// Keepalive measures the keepalive floor (see KeepaliveConfig). It raises the process's
// descriptor limit to what 2 × Conns sockets need (its hard limit too, where allowed).
func Keepalive(cfg KeepaliveConfig) (*KeepaliveResult, error) {
	if cfg.Conns <= 0 || cfg.Rounds <= 0 {
		return nil, errors.New("floor: keepalive needs Conns and Rounds above 0")
	}
	if len(cfg.Sources) == 0 {
		for i := 2; i <= 41; i++ {
			cfg.Sources = append(cfg.Sources, netip.AddrFrom4([4]byte{127, 0, 0, byte(i)}))
		}
	}
	if err := raiseNofile(uint64(2*cfg.Conns + 64)); err != nil {
		return nil, err
	}
	ln, port, err := listen()
	if err != nil {
		return nil, err
	}
	defer func() { _ = unix.Close(ln) }()
	cfds := make([]int, 0, cfg.Conns)
	sfds := make([]int, 0, cfg.Conns)
	defer func() {
		for _, fd := range cfds {
			_ = unix.Close(fd)
		}
		for _, fd := range sfds {
			_ = unix.Close(fd)
		}
	}()
	dst := &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}
	for i := 0; i < cfg.Conns; i++ {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
		if err != nil {
			return nil, fmt.Errorf("floor: socket after %d connections: %w", i, err)
		}
		cfds = append(cfds, fd)
		_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
		_ = unix.SetsockoptInt(fd, unix.SOL_IP, unix.IP_BIND_ADDRESS_NO_PORT, 1)
		if err := unix.Bind(fd, epoll.Sockaddr(netip.AddrPortFrom(cfg.Sources[i%len(cfg.Sources)], 0))); err != nil {
			return nil, fmt.Errorf("floor: bind %v: %w", cfg.Sources[i%len(cfg.Sources)], err)
		}
		if err := unix.Connect(fd, dst); err != nil {
			return nil, fmt.Errorf("floor: connect after %d connections: %w (local ports or the listen queue)", i, err)
		}
		sfd, _, err := unix.Accept4(ln, unix.SOCK_CLOEXEC)
		if err != nil {
			return nil, fmt.Errorf("floor: accept: %w", err)
		}
		sfds = append(sfds, sfd)
		_ = unix.SetsockoptInt(sfd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	}
	client, err := newSide(cfds)
	if err != nil {
		return nil, err
	}
	defer client.close()
	server, err := newSide(sfds)
	if err != nil {
		return nil, err
	}
	defer server.close()
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- server.serve(cfg.Conns * (cfg.Rounds + 1)) }()
	cerr := client.ping(cfg.Rounds)
	serr := <-done
	if err := errors.Join(cerr, serr); err != nil {
		return nil, err
	}
	pings := float64(cfg.Conns * cfg.Rounds)
	return &KeepaliveResult{Conns: cfg.Conns, Rounds: cfg.Rounds, WallS: time.Since(start).Seconds(),
		ClientUSPerPing: float64(client.cpu.Microseconds()) / pings,
		ServerUSPerPing: float64(server.cpu.Microseconds()) / pings,
	}, nil
}

// side is one end of the floor's connections: their descriptors in an epoll set.
type side struct {
	ep  int
	fds []int
	cpu time.Duration // thread CPU over the measured rounds
}

func newSide(fds []int) (*side, error) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("floor: epoll_create1: %w", err)
	}
	for i, fd := range fds {
		if err := unix.SetNonblock(fd, true); err != nil {
			return nil, fmt.Errorf("floor: set non-blocking: %w", err)
		}
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd), Pad: int32(i)}
		if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
			return nil, fmt.Errorf("floor: epoll_ctl: %w", err)
		}
	}
	return &side{ep: ep, fds: fds}, nil
}

func (s *side) close() { _ = unix.Close(s.ep) }

func threadCPU() time.Duration {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return time.Duration(ts.Nano())
}

// ping runs 1 + rounds rounds: a PINGREQ on every connection, then every PINGRESP read;
// the first round is not measured (it faults in the buffers).
func (s *side) ping(rounds int) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	events := make([]unix.EpollEvent, 1024)
	buf := make([]byte, 4096)
	var t0 time.Duration
	for r := 0; r <= rounds; r++ {
		if r == 1 {
			t0 = threadCPU()
		}
		for _, fd := range s.fds {
			if n, err := unix.Write(fd, pingreq[:]); err != nil || n != len(pingreq) {
				return fmt.Errorf("floor: write PINGREQ: %d bytes, %w", n, err)
			}
		}
		for got := 0; got < len(s.fds); {
			n, err := unix.EpollWait(s.ep, events, 10000)
			if err != nil && err != unix.EINTR {
				return fmt.Errorf("floor: epoll_wait: %w", err)
			}
			if n == 0 && err == nil {
				return fmt.Errorf("floor: %d of %d PINGRESPs within 10 s", got, len(s.fds))
			}
			for _, ev := range events[:max(n, 0)] {
				m, err := unix.Read(int(ev.Fd), buf)
				if err != nil || m <= 0 {
					return fmt.Errorf("floor: read PINGRESP: %d bytes, %w", m, err)
				}
				got += m / len(pingresp)
			}
		}
	}
	s.cpu = threadCPU() - t0
	return nil
}

// serve answers want PINGREQs; its CPU is measured from the second round's first.
func (s *side) serve(want int) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	events := make([]unix.EpollEvent, 1024)
	buf := make([]byte, 4096)
	first := len(s.fds)
	var t0 time.Duration
	timing := false
	for got := 0; got < want; {
		if got >= first && !timing {
			t0, timing = threadCPU(), true
		}
		n, err := unix.EpollWait(s.ep, events, 10000)
		if err != nil && err != unix.EINTR {
			return fmt.Errorf("floor: epoll_wait: %w", err)
		}
		if n == 0 && err == nil {
			return fmt.Errorf("floor: %d of %d PINGREQs within 10 s", got, want)
		}
		for _, ev := range events[:max(n, 0)] {
			fd := int(ev.Fd)
			m, err := unix.Read(fd, buf)
			if err != nil || m <= 0 {
				return fmt.Errorf("floor: read PINGREQ: %d bytes, %w", m, err)
			}
			for k := 0; k < m/len(pingreq); k++ {
				if w, err := unix.Write(fd, pingresp[:]); err != nil || w != len(pingresp) {
					return fmt.Errorf("floor: write PINGRESP: %d bytes, %w", w, err)
				}
			}
			got += m / len(pingreq)
		}
	}
	s.cpu = threadCPU() - t0
	return nil
}

// listen opens a listening socket on a free loopback port with a backlog that holds the
// connections made before each is accepted.
func listen() (int, int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
	if err != nil {
		return -1, 0, fmt.Errorf("floor: socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		_ = unix.Close(fd)
		return -1, 0, fmt.Errorf("floor: bind 127.0.0.1:0: %w", err)
	}
	if err := unix.Listen(fd, 4096); err != nil {
		_ = unix.Close(fd)
		return -1, 0, fmt.Errorf("floor: listen: %w", err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		_ = unix.Close(fd)
		return -1, 0, fmt.Errorf("floor: getsockname: %w", err)
	}
	return fd, sa.(*unix.SockaddrInet4).Port, nil
}

// raiseNofile lifts RLIMIT_NOFILE to at least n, the hard limit too when allowed (root).
func raiseNofile(n uint64) error {
	var l unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &l); err != nil {
		return fmt.Errorf("floor: getrlimit: %w", err)
	}
	if l.Cur >= n {
		return nil
	}
	want := l
	want.Cur = n
	if want.Max < n {
		want.Max = n
	}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &want); err != nil {
		return fmt.Errorf("floor: %d connections need %d descriptors, over the limit %d: %w "+
			"(fewer connections per process, or a higher hard limit: ulimit -Hn)", n/2, n, l.Max, err)
	}
	return nil
}
