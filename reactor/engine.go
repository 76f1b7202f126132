package reactor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/panjf2000/gnet/v2"

	"github.com/mqblast/mqblast/codec"
	"golang.org/x/sys/unix"
)

// Config describes what the engine connects and how fast.
type Config struct {
	// Brokers are host:port addresses; a client connects to Brokers[spec.Broker].
	Brokers []string
	// SourceAddrs is the number of distinct source addresses the clients bind (0: the
	// kernel chooses); the capacity check uses it.
	SourceAddrs int
	// Loops is the number of event loops (0: one per core).
	Loops int
	// Clients is the number of clients; Client(i) describes client i for 0 <= i < Clients.
	// Client is called from dialing goroutines and must be safe for concurrent use.
	Clients int
	Client  func(i int) ClientSpec
	// ConnectRate is the number of connections started per second over the whole run
	// (0: as fast as MaxConnecting allows).
	ConnectRate float64
	// MaxConnecting caps the connections between the start of their TCP connect and their
	// CONNACK (default 100: Mosquitto's listen backlog; a burst beyond it costs 1 s SYN
	// retries).
	MaxConnecting int
	// DialTimeout bounds the TCP connect, ConnackTimeout the wait for CONNACK after it
	// (defaults 10 s each).
	DialTimeout    time.Duration
	ConnackTimeout time.Duration
	// PingTimeout is how long a PINGRESP may take before the connection is declared dead
	// (default: the client's keepalive, at least 5 s).
	PingTimeout time.Duration
	// Observer receives every event; it must not be nil.
	Observer Observer
	// Reconnect, when set, redials a connection that drops while held, after a backoff of
	// ReconnectMin doubling per failed attempt up to ReconnectMax (defaults 1 s and 30 s),
	// jittered to half to full of it so that a reconnect storm spreads out.
	Reconnect                  bool
	ReconnectMin, ReconnectMax time.Duration
	// MaxPayload is the largest payload a publisher sends (default 64 KiB).
	MaxPayload int
	// PortLo and PortHi are the local port range (0: read from /proc); the capacity check
	// and IP_LOCAL_PORT_RANGE use them.
	PortLo, PortHi int
}

// ClientSpec describes one MQTT client's CONNECT.
type ClientSpec struct {
	Broker     int        // index in Config.Brokers
	Source     netip.Addr // source address to bind; the zero Addr lets the kernel choose
	ID         string
	Username   string
	Password   string
	Version    byte // protocol level: 3 (MQTT 3.1), 4 (3.1.1) or 5 (5.0)
	CleanStart bool
	Keepalive  time.Duration // 0: no keepalive
	// Props are the CONNECT's MQTT 5.0 properties (nil: none); shared and read-only.
	Props *codec.Properties
	// Subscriptions are sent in one SUBSCRIBE right after the CONNACK (nil: none).
	Subscriptions []codec.Subscription
	// Publish is what the client publishes once publishing starts (nil: nothing).
	Publish *PublishSpec
}

// Engine drives MQTT client connections from a few gnet event loops. Create it with New,
// then Start, Connect, (hold), Disconnect and Stop.
type Engine struct {
	cfg   Config
	cli   *gnet.Client
	loops []*loop
	epoch time.Time

	brokers []netip.AddrPort

	mu      sync.Mutex
	anchors []net.Conn // our ends of the per-loop anchor socket pairs

	open     atomic.Int64 // established MQTT sessions
	sessions atomic.Int64 // sockets owned by the loops
	closing  atomic.Bool  // Disconnect or Stop called: closes are not drops
	stopped  atomic.Bool
	stopTick chan struct{}
	tickWG   sync.WaitGroup

	maxPayload int
	realEpoch  int64        // CLOCK_REALTIME ns at epoch: headers carry realtime
	pubStart   atomic.Int64 // engine clock of publishing's start (0: not started)
	pubStop    atomic.Int64 // engine clock from which no message is due (0: none)
	subscribed atomic.Int64 // SUBACKs received
	backlogs   atomic.Int64 // publisher writes that left more than backlogLimit unsent

	redial    chan redialJob  // reconnects due, from the loops to the redial workers
	runCtx    context.Context // ends at Stop: cancels redials in flight
	cancelRun context.CancelFunc
}

// redialJob is one reconnect attempt of a client.
type redialJob struct {
	client  int
	attempt int
}

// New validates cfg and prepares an engine. It checks the source-port capacity per broker
// before any socket opens.
func New(cfg Config) (*Engine, error) {
	if cfg.Observer == nil {
		return nil, errors.New("reactor: Config.Observer is nil")
	}
	if len(cfg.Brokers) == 0 {
		return nil, errors.New("reactor: no broker address")
	}
	if cfg.Clients > 0 && cfg.Client == nil {
		return nil, errors.New("reactor: Config.Client is nil")
	}
	if cfg.Loops <= 0 {
		cfg.Loops = runtime.NumCPU()
	}
	if cfg.MaxConnecting <= 0 {
		cfg.MaxConnecting = 100
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 10 * time.Second
	}
	if cfg.ConnackTimeout <= 0 {
		cfg.ConnackTimeout = 10 * time.Second
	}
	if cfg.ReconnectMin <= 0 {
		cfg.ReconnectMin = time.Second
	}
	if cfg.ReconnectMax < cfg.ReconnectMin {
		cfg.ReconnectMax = max(30*time.Second, cfg.ReconnectMin)
	}
	e := &Engine{cfg: cfg, stopTick: make(chan struct{}), redial: make(chan redialJob, 4096),
		maxPayload: max(cfg.MaxPayload, 64<<10)}
	e.runCtx, e.cancelRun = context.WithCancel(context.Background())
	for _, b := range cfg.Brokers {
		ap, err := resolveBroker(b)
		if err != nil {
			return nil, err
		}
		e.brokers = append(e.brokers, ap)
	}
	if e.cfg.PortLo == 0 {
		if lo, hi, err := LocalPortRange(); err == nil {
			e.cfg.PortLo, e.cfg.PortHi = lo, hi
		}
	}
	perBroker := (cfg.Clients + len(e.brokers) - 1) / len(e.brokers)
	if err := CheckCapacity(perBroker, cfg.SourceAddrs, e.cfg.PortLo, e.cfg.PortHi); err != nil {
		return nil, err
	}
	return e, nil
}

func resolveBroker(s string) (netip.AddrPort, error) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap, nil
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("broker address %q: want host:port: %w", s, err)
	}
	ta, err := net.ResolveTCPAddr("tcp", net.JoinHostPort(host, port))
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("cannot resolve broker %q: %w", s, err)
	}
	return ta.AddrPort(), nil
}

// Start starts the event loops. Each loop gets an anchor connection (one end of a Unix
// socket pair) so that the engine knows every loop's handle and can run work on it.
func (e *Engine) Start() error {
	e.epoch = time.Now()
	e.realEpoch = e.epoch.UnixNano()
	e.loops = make([]*loop, e.cfg.Loops)
	for i := range e.loops {
		e.loops[i] = newLoop(e, i)
	}
	cli, err := gnet.NewClient(&handler{e: e},
		gnet.WithMulticore(true),
		gnet.WithNumEventLoop(e.cfg.Loops),
		gnet.WithTCPNoDelay(gnet.TCPNoDelay),
		gnet.WithReadBufferCap(64<<10),
		gnet.WithLogger(nopLogger{}),
	)
	if err != nil {
		return fmt.Errorf("cannot create the event loops: %w", err)
	}
	if err := cli.Start(); err != nil {
		return fmt.Errorf("cannot start the event loops: %w", err)
	}
	e.cli = cli
	// The client balances by least connections, so N anchors land on N distinct loops;
	// verify rather than trust it.
	seen := map[gnet.EventLoop]bool{}
	for i := 0; i < e.cfg.Loops; i++ {
		el, err := e.anchor(i)
		if err != nil {
			_ = e.Stop()
			return err
		}
		if seen[el] {
			_ = e.Stop()
			return errors.New("BUG: two anchors landed on one event loop")
		}
		seen[el] = true
		e.loops[i].el = el
	}
	for _, l := range e.loops {
		e.tickWG.Add(1)
		go e.ticker(l)
	}
	if e.cfg.Reconnect {
		for w := 0; w < min(e.cfg.MaxConnecting, 32); w++ {
			e.tickWG.Add(1)
			go e.redialer()
		}
	}
	return nil
}

// redialer runs reconnect attempts handed over by the loops until Stop.
func (e *Engine) redialer() {
	defer e.tickWG.Done()
	done := make(chan struct{}, 1)
	for {
		select {
		case <-e.stopTick:
			return
		case j := <-e.redial:
			if !e.closing.Load() {
				e.dial(e.runCtx, j.client, done, j.attempt)
			}
		}
	}
}

// anchor enrolls one end of a socket pair as loop i's anchor and returns the loop it
// landed on.
func (e *Engine) anchor(i int) (gnet.EventLoop, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("cannot create an event-loop anchor: %w", err)
	}
	ours, err := fdConn(fds[0])
	if err != nil {
		_ = unix.Close(fds[1])
		return nil, err
	}
	theirs, err := fdConn(fds[1])
	if err != nil {
		_ = ours.Close()
		return nil, err
	}
	defer theirs.Close() //nolint:errcheck // gnet holds a dup of it
	gc, err := e.cli.EnrollContext(theirs, anchorCtx(i))
	if err != nil {
		_ = ours.Close()
		return nil, fmt.Errorf("cannot enroll an event-loop anchor: %w", err)
	}
	e.mu.Lock()
	e.anchors = append(e.anchors, ours)
	e.mu.Unlock()
	return gc.EventLoop(), nil
}

func fdConn(fd int) (net.Conn, error) {
	f := os.NewFile(uintptr(fd), "anchor")
	defer f.Close() //nolint:errcheck // FileConn dups it
	c, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("cannot wrap an anchor socket: %w", err)
	}
	return c, nil
}

// anchorCtx marks an anchor connection; its value is the loop index.
type anchorCtx int

// tickInterval is how often each loop wakes for its timers: the publish schedule needs
// a fine grain; the scans for CONNACK and ping timeouts and keepalive run every
// scanInterval (keepalives are whole seconds).
const (
	tickInterval = time.Millisecond
	scanInterval = 100 * time.Millisecond
)

func (e *Engine) ticker(l *loop) {
	defer e.tickWG.Done()
	t := time.NewTimer(scanInterval)
	defer t.Stop()
	for {
		select {
		case <-e.stopTick:
			return
		case <-l.wake:
			t.Reset(tickInterval)
		case <-t.C:
			// A loop with a publish schedule wakes every millisecond; an idle one only for its
			// scans: 1,000 wake-ups a second per loop cost more than a connect does.
			if l.busy.Load() {
				t.Reset(tickInterval)
			} else {
				t.Reset(scanInterval)
			}
			if l.tickPending.CompareAndSwap(false, true) {
				if err := l.el.Execute(context.Background(), l); err != nil {
					l.tickPending.Store(false)
				}
			}
		}
	}
}

// now returns the engine clock: nanoseconds since Start, monotonic.
func (e *Engine) now() int64 { return int64(time.Since(e.epoch)) }

// StartPublishing starts every publisher's schedule at the engine clock's now plus
// delay: message k of a publisher is due at start + Phase + k/Rate. It returns the start
// as wall-clock time.
func (e *Engine) StartPublishing(delay time.Duration) time.Time {
	start := e.now() + int64(delay)
	e.pubStart.Store(start)
	e.OnLoops(func(i int) { e.loops[i].beginPublishing() })
	return e.epoch.Add(time.Duration(start))
}

// StopPublishing ends every schedule: no message due from now on is sent. Only the first
// call counts.
func (e *Engine) StopPublishing() { e.pubStop.CompareAndSwap(0, max(e.now(), 1)) }

// Behind reports whether a connected publisher still has a message due before the stop
// that it has not sent (its in-flight window is full, or it is late). Call after
// StopPublishing.
func (e *Engine) Behind() bool {
	var behind atomic.Bool
	stop := e.pubStop.Load()
	e.OnLoops(func(i int) {
		for _, p := range e.loops[i].pubs {
			if p.s != nil && p.s.state == stConnected && !p.done && (stop == 0 || p.nextDue < stop) {
				behind.Store(true)
				return
			}
		}
	})
	return behind.Load()
}

// WriteBacklogs returns how many publisher writes left more than 4 MiB unsent on their
// connection: evidence that the client (or its network) cannot keep up with its schedule.
func (e *Engine) WriteBacklogs() int64 { return e.backlogs.Load() }

// Subscribed returns the number of SUBACKs received (one per subscribing client).
func (e *Engine) Subscribed() int64 { return e.subscribed.Load() }

// RealTime converts a wall-clock time to the CLOCK_REALTIME ns the headers carry.
func (e *Engine) RealTime(t time.Time) int64 { return t.UnixNano() }

// Open returns the number of established MQTT sessions.
func (e *Engine) Open() int64 { return e.open.Load() }

// Loops returns the number of event loops.
func (e *Engine) Loops() int { return len(e.loops) }

// OnLoops runs f on every event loop and waits for all of them; f(i) runs on loop i, so it
// may read and reset what that loop owns (its recorder, for one).
func (e *Engine) OnLoops(f func(loop int)) {
	var wg sync.WaitGroup
	for _, l := range e.loops {
		wg.Add(1)
		idx := l.idx
		err := l.el.Execute(context.Background(), runFunc(func() {
			defer wg.Done()
			f(idx)
		}))
		if err != nil { // the engine is shut down: nothing runs on the loop any more
			wg.Done()
			f(idx)
		}
	}
	wg.Wait()
}

type runFunc func()

func (f runFunc) Run(context.Context) error { f(); return nil }

// Connect dials every client, paced by ConnectRate and capped at MaxConnecting in flight,
// and returns when every client has a verdict (connected, refused or failed) or ctx ends.
// progress, if not nil, is called after each dial starts with the number started so far
// (from a single goroutine).
func (e *Engine) Connect(ctx context.Context, progress func(started int)) error {
	jobs := make(chan int)
	var wg sync.WaitGroup
	workers := min(e.cfg.MaxConnecting, max(e.cfg.Clients, 1))
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			done := make(chan struct{}, 1)
			for i := range jobs {
				e.dial(ctx, i, done, 0)
			}
		}()
	}
	start := time.Now()
	var err error
dispatch:
	for i := 0; i < e.cfg.Clients; i++ {
		if e.cfg.ConnectRate > 0 {
			due := start.Add(time.Duration(float64(i) / e.cfg.ConnectRate * float64(time.Second)))
			if d := time.Until(due); d > 0 {
				t := time.NewTimer(d)
				select {
				case <-ctx.Done():
					t.Stop()
					err = ctx.Err()
					break dispatch
				case <-t.C:
				}
			}
		}
		select {
		case <-ctx.Done():
			err = ctx.Err()
			break dispatch
		case jobs <- i:
		}
		if progress != nil {
			progress(i + 1)
		}
	}
	close(jobs)
	wg.Wait()
	return err
}

// dial connects client i and waits for its verdict. attempt is 0 for the first connect and
// counts reconnect attempts from 1.
func (e *Engine) dial(ctx context.Context, i int, done chan struct{}, attempt int) {
	spec := e.cfg.Client(i)
	dst := e.brokers[spec.Broker%len(e.brokers)]
	l := e.loops[i%len(e.loops)]
	d := net.Dialer{
		Timeout:   e.cfg.DialTimeout,
		KeepAlive: -1, // MQTT has its own keepalive; Go's 15 s TCP probes are noise
		Control:   dialControl(e.cfg.PortLo, e.cfg.PortHi),
	}
	if spec.Source.IsValid() {
		d.LocalAddr = net.TCPAddrFromAddrPort(netip.AddrPortFrom(spec.Source, 0))
	}
	s := &session{client: int32(i), spec: &spec, done: done, keepalive: spec.Keepalive, version: spec.Version,
		attempt: uint8(min(attempt, 255))}
	s.dialStart = e.now()
	nc, err := d.DialContext(ctx, "tcp", dst.String())
	if err != nil {
		cause, ex := classify(err)
		e.verdict(l, s, done, func() { e.cfg.Observer.Failed(l.idx, i, cause, ex) })
		return
	}
	ch, err := l.el.Enroll(gnet.NewContext(context.Background(), s), nc)
	if err != nil {
		_ = nc.Close()
		cause, ex := classify(err)
		e.verdict(l, s, done, func() { e.cfg.Observer.Failed(l.idx, i, cause, ex) })
		return
	}
	res := <-ch
	_ = nc.Close() // gnet holds a dup of the socket
	if res.Err != nil {
		cause, ex := classify(res.Err)
		e.verdict(l, s, done, func() { e.cfg.Observer.Failed(l.idx, i, cause, ex) })
		return
	}
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// verdict reports a failure that happened off the loop on the loop, and waits for it.
func (e *Engine) verdict(l *loop, s *session, done chan struct{}, report func()) {
	err := l.el.Execute(context.Background(), runFunc(func() {
		report()
		s.signal()
		l.retry(s)
	}))
	if err != nil {
		return
	}
	<-done
}

// Disconnect sends DISCONNECT on every established session and closes every socket, then
// waits up to timeout for the loops to let go of them.
func (e *Engine) Disconnect(timeout time.Duration) {
	e.closing.Store(true)
	e.OnLoops(func(i int) { e.loops[i].disconnectAll() })
	deadline := time.Now().Add(timeout)
	for e.sessions.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
}

// Stop stops the event loops and releases everything. It is safe to call more than once.
func (e *Engine) Stop() error {
	if e.stopped.Swap(true) {
		return nil
	}
	e.closing.Store(true)
	e.cancelRun()
	close(e.stopTick)
	e.tickWG.Wait()
	var err error
	if e.cli != nil {
		err = e.cli.Stop()
	}
	e.mu.Lock()
	for _, a := range e.anchors {
		_ = a.Close()
	}
	e.anchors = nil
	e.mu.Unlock()
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

// classify maps a dial or socket error to a Cause and a short example text.
func classify(err error) (Cause, string) {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return CauseRefused, err.Error()
	case errors.Is(err, syscall.EADDRNOTAVAIL), errors.Is(err, syscall.EADDRINUSE):
		return CauseAddrExhausted, err.Error()
	case errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE):
		return CauseFDLimit, err.Error()
	case errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTUNREACH),
		errors.Is(err, syscall.EINVAL), errors.Is(err, syscall.EAFNOSUPPORT):
		return CauseUnreachable, err.Error()
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return CauseTimeout, err.Error()
	default:
		return CauseNetwork, err.Error()
	}
}

// nopLogger silences gnet: the engine reports through the Observer.
type nopLogger struct{}

func (nopLogger) Debugf(string, ...any) {}
func (nopLogger) Infof(string, ...any)  {}
func (nopLogger) Warnf(string, ...any)  {}
func (nopLogger) Errorf(string, ...any) {}
func (nopLogger) Fatalf(string, ...any) {}
