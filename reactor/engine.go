package reactor

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

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
	// Client is called by the event loops as they dial, concurrently: it must be safe for
	// concurrent use.
	Clients int
	Client  func(i int) ClientSpec
	// ConnectRate is the number of connections started per second over the whole run
	// (0: as fast as MaxConnecting allows).
	ConnectRate float64
	// ConnectDelay puts off the first dial that long past the connect phase's start (with
	// ConnectRate > 0): a worker process's turn at dialing among the others of its host.
	ConnectDelay time.Duration
	// MaxConnecting caps the connections between the start of their TCP connect and their
	// verdict, MaxConnecting/Loops per loop (default 100: Mosquitto's listen backlog; a
	// burst beyond it costs 1 s SYN retries).
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
	Reconnect bool
	// ReconnectClient, when set, says which clients Reconnect applies to (a mixed run's
	// groups have policies of their own); nil: every client.
	ReconnectClient            func(client int) bool
	ReconnectMin, ReconnectMax time.Duration
	// MaxPayload is the largest payload a publisher sends (default 64 KiB).
	MaxPayload int
	// Payload is the text every published payload carries after its measurement bytes,
	// from byte MeasuredSize on (nil: zeros): a PublishSpec of PayloadSize MeasuredSize +
	// len(Payload) sends all of it, a shorter one what fits. Written once into each loop's
	// scratch payload, so that a message costs no copy of it.
	Payload []byte
	// MaxInbound is the largest packet, in bytes, a client accepts from the broker (default:
	// MaxPayload plus 64 KiB for the topic and properties, at least 1 MiB). A 5.0 CONNECT
	// announces it as Maximum Packet Size unless ClientSpec.Props sets one, and then the
	// smaller of the two is the limit. A packet over it ends the connection as
	// CauseClientLimit: the client's own limit, not the broker's fault.
	MaxInbound int
	// TLS configures the connections to mqtts:// and wss:// brokers (nil: verification
	// against the system's roots, TLS 1.2 and up). Without a ClientSessionCache one is made,
	// so that reconnects resume their sessions (each client its own); ServerName defaults to
	// the broker's host. A broker's certificate chain is verified once, not on every
	// handshake (unless the configuration has a verification of its own). See TLSConfig.
	TLS *tls.Config
	// ClientCert, if set, says where a client's certificate comes from: its ClientCerts
	// (nil: TLS's Certificates) and its index in its group (the templates' $clientindex).
	// The certificate is made on the handshake worker when the broker asks for one. It
	// is called on the handshake workers, concurrently.
	ClientCert func(client int) (cc *ClientCerts, index int)
	// HandshakeWorkers bounds the goroutines that run TCP connects, TLS handshakes and
	// WebSocket upgrades for TLS and WebSocket brokers (default 4 per loop, at least 8).
	HandshakeWorkers int
	// TLSRecordLayer says what seals and opens the records of an established TLS
	// connection: RecordLayerLoop ("" too), the loop itself for TLS 1.3 connections with a
	// suite internal/tlsrec runs (others keep their tls.Conn), or RecordLayerTLSConn,
	// crypto/tls's tls.Conn for every connection.
	TLSRecordLayer string
	// Marks makes receivers look for the text measurement mark (a payload template's
	// {{mark}}, or a 5.0 User Property's) in a copy without the measurement header, as
	// publishers that measure by mark or by User Property place it.
	Marks bool
	// RunTag is the run's identity, carried in every measured header (HeaderSize): a
	// receiver tells this run's messages from those of any other mqblast run on the same
	// topics. The shards and worker processes of one run share it.
	RunTag uint16
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
	// Respond makes a 5.0 client a responder: it answers every PUBLISH it receives that
	// carries a Response Topic with a PUBLISH to that topic at RespondQoS (the broker's
	// Maximum QoS when lower), with the request's Correlation Data and payload.
	Respond    bool
	RespondQoS byte
}

// Engine drives MQTT client connections from a few event loops. Create it with New, then
// Start, Connect, (hold), Disconnect and Stop.
type Engine struct {
	cfg   Config
	loops []*loop
	wg    sync.WaitGroup // the loops' goroutines
	epoch time.Time

	brokers   []netip.AddrPort
	targets   []target // by broker: scheme, host, path
	tlsBase   *tls.Config
	tlsSess   *sessionSlots // each client's TLS session, when the configuration brings no cache
	hs        handshakers
	portRange uint32 // IP_LOCAL_PORT_RANGE value (0: leave the kernel's)

	open     atomic.Int64 // established MQTT sessions
	sessions atomic.Int64 // sockets owned by the loops
	closing  atomic.Bool  // Disconnect or Stop called: closes are not drops
	stopped  atomic.Bool

	connStart   atomic.Int64                // engine clock of the connect phase's start (0: not started)
	pace        atomic.Pointer[connectPace] // SetConnectRate's pace (nil: Config.ConnectRate)
	dialStop    atomic.Bool                 // Connect's context ended: no more first dials
	started     atomic.Int64                // first dials started
	verdicts    atomic.Int64                // first dials with their verdict
	allVerdicts chan struct{}

	errMu   sync.Mutex
	loopErr error // the first error that ended a loop

	maxPayload int
	realEpoch  int64                   // CLOCK_REALTIME ns at epoch: headers carry realtime
	pubStart   atomic.Int64            // engine clock of publishing's start (0: not started)
	pubStop    atomic.Int64            // engine clock from which no message is due (0: none yet; stopPending: being read); it may lie ahead
	rates      rates                   // SetRate's changes
	prof       atomic.Pointer[profile] // the rate profile once publishing started (nil: none, the plan's rates)
	subscribed atomic.Int64            // SUBACKs received
	subGranted atomic.Int64            // SUBACKs that granted at least one filter
	subGone    atomic.Int64            // first connects whose subscriptions will get no SUBACK: the connection ended first
	lacking    atomic.Int64            // CONNACKs that announced a capability the client's plan needs is missing
	finished   atomic.Bool             // FinishPublishing ran: closes account for nothing more
	limited    atomic.Int64            // CONNACKs whose Maximum Packet Size is below the publisher's largest PUBLISH
	maxIn      int                     // Config.MaxInbound or its default
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
	switch cfg.TLSRecordLayer {
	case "", RecordLayerLoop, RecordLayerTLSConn:
	default:
		return nil, fmt.Errorf("TLS record layer %q: want %s or %s", cfg.TLSRecordLayer, RecordLayerLoop, RecordLayerTLSConn)
	}
	e := &Engine{cfg: cfg, allVerdicts: make(chan struct{}), maxPayload: max(cfg.MaxPayload, MeasuredSize+len(cfg.Payload), 64<<10)}
	e.maxIn = cfg.MaxInbound
	if e.maxIn <= 0 {
		e.maxIn = defaultInbound(e.maxPayload)
	}
	secure := false
	for _, b := range cfg.Brokers {
		tg, err := resolveTarget(b)
		if err != nil {
			return nil, err
		}
		e.brokers = append(e.brokers, tg.ap)
		e.targets = append(e.targets, tg)
		secure = secure || tg.tls()
	}
	if e.cfg.HandshakeWorkers <= 0 {
		e.cfg.HandshakeWorkers = max(8, 4*cfg.Loops)
	}
	if secure {
		e.tlsBase = &tls.Config{MinVersion: tls.VersionTLS12}
		if cfg.TLS != nil {
			e.tlsBase = cfg.TLS.Clone()
		}
		if e.tlsBase.ClientSessionCache == nil {
			e.tlsSess = &sessionSlots{s: make([]sessionSlot, cfg.Clients)}
		}
		cacheVerification(e.tlsBase)
	}
	if e.cfg.PortLo == 0 {
		if lo, hi, err := LocalPortRange(); err == nil {
			e.cfg.PortLo, e.cfg.PortHi = lo, hi
		}
	}
	if e.cfg.PortLo > 0 && e.cfg.PortHi >= e.cfg.PortLo && e.cfg.PortHi <= 65535 {
		e.portRange = uint32(e.cfg.PortLo) | uint32(e.cfg.PortHi)<<16
	}
	perBroker := (cfg.Clients + len(e.brokers) - 1) / len(e.brokers)
	if err := CheckCapacity(perBroker, cfg.SourceAddrs, e.cfg.PortLo, e.cfg.PortHi); err != nil {
		return nil, err
	}
	return e, nil
}

// Start starts the event loops: one goroutine each.
func (e *Engine) Start() error {
	// The clock starts at the last whole second of the wall clock (Add keeps the monotonic
	// reading): its whole seconds, the keepalives' ping grid, are the same instants in
	// every engine on the host, so that a run's worker processes ping together and a
	// process serving them (a sink's) wakes once a second for all of them.
	now := time.Now()
	e.epoch = now.Add(-time.Duration(now.UnixNano() % int64(time.Second)))
	e.realEpoch = e.epoch.UnixNano()
	for i := 0; i < e.cfg.Loops; i++ {
		l, err := newLoop(e, i)
		if err != nil {
			for _, l := range e.loops {
				_ = unix.Close(l.ep)
				_ = unix.Close(l.evfd)
			}
			e.loops = nil
			return err
		}
		e.loops = append(e.loops, l)
	}
	// A loop sleeps in epoll_pwait2 holding its P. With no idle P left, the runtime's
	// sysmon takes every such P back after 20 µs and then polls every 20 µs itself; one P
	// more than loops keeps it asleep (measured: 15,000 connects at 5,000/s, 2 loops, CPU
	// per connect 123 → 95 µs).
	if runtime.GOMAXPROCS(0) <= len(e.loops) {
		runtime.GOMAXPROCS(len(e.loops) + 1)
	}
	for _, l := range e.loops {
		e.wg.Add(1)
		go l.run(e.wg.Done)
	}
	return nil
}

// loopFailed records the error that ended a loop; Stop returns the first.
func (e *Engine) loopFailed(err error) {
	e.errMu.Lock()
	if e.loopErr == nil {
		e.loopErr = fmt.Errorf("event loop: %w", err)
	}
	e.errMu.Unlock()
}

// firstVerdict counts a first connect attempt's verdict; the last one ends Connect.
func (e *Engine) firstVerdict() {
	if e.verdicts.Add(1) == int64(e.cfg.Clients) {
		close(e.allVerdicts)
	}
}

// now returns the engine clock: nanoseconds since Start, monotonic.
func (e *Engine) now() int64 { return int64(time.Since(e.epoch)) }

// StartPublishing starts every publisher's schedule at the engine clock's now plus
// delay: message k of a publisher is due at start + Phase + k/Rate, or with a rate profile
// (SetRate) when the schedule time τ reaches Phase + k/Rate. It returns the start as
// wall-clock time.
func (e *Engine) StartPublishing(delay time.Duration) time.Time {
	start := e.now() + int64(delay)
	e.rates.mu.Lock()
	if len(e.rates.changes) > 0 { // before the start: a loop that sees the start sees the profile
		e.prof.Store(buildProfile(start, e.rates.changes))
	}
	e.pubStart.Store(start)
	e.rates.mu.Unlock()
	e.OnLoops(func(i int) { e.loops[i].beginPublishing() })
	return e.epoch.Add(time.Duration(start))
}

// StopPublishingAt ends every schedule at the wall-clock instant at, set ahead of time: no
// message due at or after it is sent, however late the caller's own timer fires on a
// loaded host, so that a run of a given duration schedules rate x duration messages. A
// later StopPublishing still ends them sooner (an interrupt). Call after StartPublishing;
// only a call before any stop counts.
func (e *Engine) StopPublishingAt(at time.Time) {
	e.pubStop.CompareAndSwap(0, max(int64(at.Sub(e.epoch)), 1))
}

// StopPublishing ends every schedule now: no message due from now on is sent. A stop
// already past (an earlier call, or the instant StopPublishingAt set) stays.
//
// The stop is claimed (stopPending) before its time is read, and the loops wait for the
// time while it is claimed (Engine.stopAt): a publish pass that saw no stop (or a stop
// still ahead) had read its clock before the claim, so that everything it wrote is due
// before the stop. Read before the claim, the time could be older than a pass that saw no
// stop (the thread taken off its CPU in between, on a loaded host), and that pass wrote
// messages due after it: published above scheduled. The +1 puts the stop after such a
// pass's clock also where the clock did not move between the two reads (it is never 0
// either).
func (e *Engine) StopPublishing() {
	var ahead int64
	for {
		ahead = e.pubStop.Load()
		if ahead == stopPending {
			runtime.Gosched() // another caller is reading its time: that stop is now
			continue
		}
		if ahead != 0 && ahead <= e.now() {
			return
		}
		if e.pubStop.CompareAndSwap(ahead, stopPending) {
			break
		}
	}
	if stopGap != nil {
		stopGap()
	}
	stop := e.now() + 1
	if ahead != 0 {
		stop = min(stop, ahead)
	}
	e.pubStop.Store(stop)
}

// stopPending is pubStop while StopPublishing reads the stop's time.
const stopPending = -1

// stopAt returns the engine clock from which no message is due (0: no stop yet), waiting
// for StopPublishing to read it if it has claimed it.
func (e *Engine) stopAt() int64 {
	for {
		if stop := e.pubStop.Load(); stop != stopPending {
			return stop
		}
		runtime.Gosched()
	}
}

// stopGap, set by tests only, runs in StopPublishing where a thread taken off its CPU pauses.
var stopGap func()

// Behind reports whether a connected publisher still has something to finish: a message
// due before the stop that it has not sent (its in-flight window is full, or it is late),
// bytes its socket has not taken, or a QoS 1/2 message not yet acknowledged. Call after
// StopPublishing: the drain waits while it is true.
func (e *Engine) Behind() bool {
	var behind atomic.Bool
	stop := e.stopAt()
	e.OnLoops(func(i int) {
		for _, p := range e.loops[i].pubs {
			s := p.s
			if s == nil || s.state != stConnected {
				continue
			}
			if (!p.done && (stop == 0 || p.nextDue < stop)) || p.qHead < len(p.queue) || p.flN > 0 {
				behind.Store(true)
				return
			}
		}
	})
	return behind.Load()
}

// FinishPublishing ends publishing for good and accounts, on every loop, for every
// scheduled message: each publisher's unsent messages by cause (interrupted says the run
// was stopped early), its open holds, and its account (Observer.PublisherEnd) with what is
// in flight. Call once, after the drain and before Disconnect.
func (e *Engine) FinishPublishing(interrupted bool) {
	e.StopPublishing()
	e.OnLoops(func(i int) { e.loops[i].finishPublishing(interrupted) })
	e.finished.Store(true)
}

// PacketLimited returns how many CONNACKs of publishing 5.0 sessions announced a Maximum
// Packet Size below the largest PUBLISH their PublishSpec produces (PayloadSize bytes of
// payload, the topic, QoS and properties): those messages cannot be sent on that connection
// [MQTT-3.2.2-15], so a run can warn before its publish phase.
func (e *Engine) PacketLimited() int64 { return e.limited.Load() }

// SubscribeSettled returns how many subscribing clients need no more waiting for: those
// with their SUBACK (granted or refused), plus those whose first connection ended, or never
// was established, before it.
func (e *Engine) SubscribeSettled() int64 { return e.subscribed.Load() + e.subGone.Load() }

// SubscribeGranted returns how many SUBACKs granted at least one filter.
func (e *Engine) SubscribeGranted() int64 { return e.subGranted.Load() }

// Lacking returns how many connections' 5.0 CONNACKs said the broker lacks something their
// plan needs (Maximum QoS below the publisher's, no retain, no shared or wildcard
// subscriptions): the engine runs them at what the broker grants (Observer.Behaved).
func (e *Engine) Lacking() int64 { return e.lacking.Load() }

// Subscribed returns the number of SUBACKs received (one per subscribing client), and of
// SUBSCRIBEs the client did not send because they exceed the broker's Maximum Packet Size
// (reported to Observer.Subscribed with code 0x95).
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
		if !l.execute(func() { defer wg.Done(); f(idx) }) { // the loop has ended: nothing else runs there
			f(idx)
			wg.Done()
		}
	}
	wg.Wait()
}

// Connect dials every client and returns when every client has a verdict (connected,
// refused or failed) or ctx ends. Each loop dials its own clients (client i is loop
// i%Loops's) at the phase's start plus ConnectDelay plus i/ConnectRate (SetConnectRate
// re-paces the rest),
// with at most MaxConnecting/Loops without a verdict. progress, if not nil, is called every
// 100 ms and at the end with the number of dials started (from the calling goroutine). Call
// it once.
func (e *Engine) Connect(ctx context.Context, progress func(started int)) error {
	report := func() {
		if progress != nil {
			progress(int(e.started.Load()))
		}
	}
	if e.cfg.Clients == 0 {
		return nil
	}
	e.connStart.Store(max(e.now(), 1))
	for _, l := range e.loops {
		l.wakeup()
	}
	// Every 100 ms: a thread wake costs ~45 µs of CPU here, and at 833 connects/s a 10 ms
	// ticker cost 5 µs per connect.
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			e.dialStop.Store(true)
			report()
			return ctx.Err()
		case <-e.allVerdicts:
			report()
			return nil
		case <-t.C:
			report()
		}
	}
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

// Stop ends the event loops and closes every socket they hold. It is safe to call more
// than once; it returns the error that ended a loop early, if one did.
func (e *Engine) Stop() error {
	if e.stopped.Swap(true) {
		return nil
	}
	e.closing.Store(true)
	for _, l := range e.loops {
		l.halt()
	}
	e.wg.Wait()
	e.stopHandshakers()
	e.errMu.Lock()
	defer e.errMu.Unlock()
	return e.loopErr
}

// classify maps a dial or socket error to a Cause and a short example text.
func classify(err error) (Cause, string) {
	var ne net.Error
	var oe *net.OpError
	var re *recordError
	switch {
	case errors.As(err, &re): // the loop's TLS record layer refused a record
		return re.cause(), err.Error()
	case errors.As(err, &oe) && oe.Op == "remote error": // crypto/tls: the broker's TLS alert
		return CauseTLS, err.Error()
	case errors.Is(err, syscall.ECONNREFUSED):
		return CauseRefused, err.Error()
	case errors.Is(err, syscall.EADDRNOTAVAIL), errors.Is(err, syscall.EADDRINUSE):
		return CauseAddrExhausted, err.Error()
	case errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE):
		return CauseFDLimit, err.Error()
	case errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTUNREACH),
		errors.Is(err, syscall.EINVAL), errors.Is(err, syscall.EAFNOSUPPORT):
		return CauseUnreachable, err.Error()
	case errors.Is(err, syscall.ETIMEDOUT), errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return CauseTimeout, err.Error()
	default:
		return CauseNetwork, err.Error()
	}
}
