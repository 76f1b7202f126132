package sink

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mqblast/mqblast/internal/child"
	"github.com/mqblast/mqblast/tuning"
)

// Line is one line of `mqblast sink --stats-json`: the counters, with the processes' CPU and
// memory. A process of a --procs parent writes them to the parent, which sums them.
type Line struct {
	TS    float64 `json:"t_s"` // seconds since start
	Final bool    `json:"final"`
	Stats
	CPUS     float64 `json:"cpu_s"`     // the processes' CPU time, user + system
	RSSBytes int64   `json:"rss_bytes"` // the processes' resident memory
	// AnonRSSBytes is the anonymous part of it: what the processes' own data hold, without
	// the pages of the binary each has touched (one copy in the page cache for all).
	AnonRSSBytes int64  `json:"anon_rss_bytes"`
	Addr         string `json:"addr"`
	// ProcConnections are the open connections of each process (--procs parent only).
	ProcConnections []int64 `json:"proc_connections,omitempty"`
}

// ServeOptions say how Serve reports.
type ServeOptions struct {
	// Interval is the time between two Lines.
	Interval time.Duration
	// Lines, when not nil, takes a JSON Line every Interval and the final one.
	Lines io.Writer
	// Ready is called with the listening address once the server accepts.
	Ready func(addr string)
}

// Serve runs a sink of cfg in this process until ctx ends and returns its final Line.
func Serve(ctx context.Context, cfg Config, o ServeOptions) (Line, error) {
	start := time.Now()
	srv, err := Start(context.Background(), cfg)
	if err != nil {
		return Line{}, err
	}
	defer srv.Close() //nolint:errcheck
	line := func(final bool) Line {
		return Line{TS: time.Since(start).Seconds(), Final: final, Stats: srv.Stats(),
			CPUS: tuning.SelfCPU().Seconds(), RSSBytes: tuning.SelfRSS(),
			AnonRSSBytes: tuning.SelfAnonRSS(), Addr: srv.Addr()}
	}
	if o.Ready != nil {
		o.Ready(srv.Addr())
	}
	if err := writeLines(ctx, o.Interval, o.Lines, line); err != nil {
		return Line{}, err
	}
	if err := srv.Close(); err != nil {
		return Line{}, err
	}
	final := line(true)
	if o.Lines != nil {
		if err := json.NewEncoder(o.Lines).Encode(final); err != nil {
			return final, err
		}
	}
	return final, nil
}

// writeLines writes line(false) to out (when not nil) every interval until ctx ends.
func writeLines(ctx context.Context, interval time.Duration, out io.Writer, line func(final bool) Line) error {
	var enc *json.Encoder
	if out != nil {
		enc = json.NewEncoder(out)
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			if enc != nil {
				if err := enc.Encode(line(false)); err != nil {
					return err
				}
			}
		}
	}
}

// ProcsOptions say how ServeProcs starts and reports its processes.
type ProcsOptions struct {
	// Procs is the number of processes.
	Procs int
	// Listen is the address the first process listens on; the others take its port.
	Listen string
	// Args are the arguments of `mqblast` that run one process listening on listen and
	// writing its Lines on stdout (`sink --child ...`), in its place turn among the others.
	Args func(listen string, turn Turn) []string
	// Fill, when above 0, has the processes take the port's new connections in turns, Fill
	// each, in the order they start (Turn).
	Fill int
	// Log takes the processes' stderr.
	Log io.Writer
	// Interval and Lines as in ServeOptions, for the summed Lines.
	Interval time.Duration
	Lines    io.Writer
	// Ready is called with the address once every process accepts.
	Ready func(addr string)
}

// ServeProcs runs o.Procs sink processes on one port (SO_REUSEPORT) until ctx ends and
// returns the final Line, summed over them. It is an error when one of them did not report
// its final counters.
func ServeProcs(ctx context.Context, o ProcsOptions) (Line, error) {
	start := time.Now()
	type proc struct {
		p    *child.Process
		mu   sync.Mutex
		last Line
		done chan struct{} // its lines are read
	}
	procs := make([]*proc, 0, o.Procs)
	stopAll := func() {
		for _, pr := range procs {
			pr.p.Signal(syscall.SIGTERM)
		}
		for _, pr := range procs {
			_ = pr.p.Stop()
			<-pr.done
			pr.p.Close()
		}
	}
	addr := o.Listen
	turn := func(i int) Turn {
		if o.Fill <= 0 || o.Procs <= 1 {
			return Turn{}
		}
		return Turn{Index: i, Procs: o.Procs, Fill: o.Fill}
	}
	for i := range o.Procs {
		// Detached: the processes stop when ServeProcs tells them (SIGTERM), not on the
		// terminal's Ctrl-C, so that it collects their final lines.
		p, err := child.Start(child.Spec{Name: fmt.Sprintf("sink process %d of %d", i+1, o.Procs), Args: o.Args(addr, turn(i)),
			Log: o.Log, Signal: syscall.SIGTERM, Timeout: 10 * time.Second, Detach: true})
		if err != nil {
			stopAll()
			return Line{}, err
		}
		pr := &proc{p: p, done: make(chan struct{})}
		procs = append(procs, pr)
		a, err := p.AwaitReady("ready ")
		if err != nil {
			close(pr.done)
			stopAll()
			return Line{}, err
		}
		if i == 0 {
			addr = a // the others take the same port
		}
		go func() {
			defer close(pr.done)
			for {
				b, err := p.Output.ReadBytes('\n')
				if len(b) > 0 {
					var l Line
					if json.Unmarshal(b, &l) == nil {
						pr.mu.Lock()
						pr.last = l
						pr.mu.Unlock()
					}
				}
				if err != nil {
					return
				}
			}
		}()
	}
	sum := func(final bool) Line {
		s := Line{TS: time.Since(start).Seconds(), Final: final, Addr: addr}
		for _, pr := range procs {
			pr.mu.Lock()
			s.Add(&pr.last.Stats)
			s.ProcConnections = append(s.ProcConnections, pr.last.Connections)
			s.CPUS += pr.last.CPUS
			s.RSSBytes += pr.last.RSSBytes
			s.AnonRSSBytes += pr.last.AnonRSSBytes
			pr.mu.Unlock()
		}
		return s
	}
	if o.Ready != nil {
		o.Ready(addr)
	}
	err := writeLines(ctx, o.Interval, o.Lines, sum)
	stopAll()
	if err != nil {
		return Line{}, err
	}
	final := sum(true)
	if o.Lines != nil {
		if err := json.NewEncoder(o.Lines).Encode(final); err != nil {
			return Line{}, err
		}
	}
	if final.Procs != o.Procs {
		return final, fmt.Errorf("only %d of %d sink processes reported their final counters", final.Procs, o.Procs)
	}
	return final, nil
}

// ProcsFor is how many processes hold connections (--procs auto): one per core, more when
// the descriptor limit of one holds fewer. SO_REUSEPORT spreads connections over the
// processes by a hash of their addresses, not evenly: each is sized for AutoFill of what it
// holds, so that none is full while the others have room.
func ProcsFor(connections int) int {
	n := runtime.NumCPU()
	if connections > 0 {
		per := max(int(float64(PerProcess())*AutoFill), 1)
		n = max(n, (connections+per-1)/per)
	}
	return min(n, MaxProcs)
}

// Child is a sink started in child processes for a calibration run (`mqblast run --sink`).
type Child struct {
	// Addr is where it listens.
	Addr string
	// Procs is true when it runs in several processes (--procs auto), which relay only
	// among their own clients.
	Procs bool
	// TLS, for StartChildTLS, is the certificate the sink serves; the client trusts its Pool.
	TLS *RunCert
	// WS is true when it speaks MQTT over WebSocket (StartChildWS), on DefaultWSPath.
	WS  bool
	p   *child.Process
	dir string // the certificate's directory, removed by Stop
}

// StartChild starts `mqblast sink` in a child process on a free loopback port, with
// flushDelay as its --flush-delay. A run of more connections than one process holds gets
// `--procs auto`.
func StartChild(exe string, flushDelay time.Duration, conns int) (*Child, error) {
	return startChild(exe, flushDelay, conns, nil, false)
}

// StartChildTLS is StartChild for a run over TLS: the sink speaks mqtts with a RunCert
// made for it (Child.TLS), in a directory of its own that Stop removes.
func StartChildTLS(exe string, flushDelay time.Duration, conns int) (*Child, error) {
	return startChildTLS(exe, flushDelay, conns, false)
}

// StartChildWS is StartChild for a run over WebSocket (`--ws`), and with tls over
// WebSocket and TLS (wss, as StartChildTLS).
func StartChildWS(exe string, flushDelay time.Duration, conns int, tls bool) (*Child, error) {
	if tls {
		return startChildTLS(exe, flushDelay, conns, true)
	}
	return startChild(exe, flushDelay, conns, nil, true)
}

func startChildTLS(exe string, flushDelay time.Duration, conns int, ws bool) (*Child, error) {
	dir, err := os.MkdirTemp("", "mqblast-sink-tls-")
	if err != nil {
		return nil, err
	}
	rc, err := NewRunCert(dir)
	if err == nil {
		var c *Child
		if c, err = startChild(exe, flushDelay, conns, rc, ws); err == nil {
			c.dir = dir
			return c, nil
		}
	}
	_ = os.RemoveAll(dir)
	return nil, err
}

func startChild(exe string, flushDelay time.Duration, conns int, rc *RunCert, ws bool) (*Child, error) {
	args := []string{"sink", "--child", "--listen", "127.0.0.1:0", "--interval", "1h", "--flush-delay", flushDelay.String()}
	var lim unix.Rlimit
	many := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) == nil && uint64(conns)+64 > lim.Max
	ready := child.Stdout
	if many { // the parent says ready on stderr
		args = []string{"sink", "--procs", "auto", "--connections", strconv.Itoa(conns), "--listen", "127.0.0.1:0",
			"--flush-delay", flushDelay.String()}
		ready = child.Stderr
	}
	if rc != nil {
		args = append(args, "--tls-cert", rc.CertFile, "--tls-key", rc.KeyFile)
	}
	if ws {
		args = append(args, "--ws")
	}
	p, err := child.Start(child.Spec{Name: "the sink", Exe: exe, Args: args, Output: ready, Signal: syscall.SIGTERM, Timeout: 15 * time.Second})
	if err != nil {
		return nil, err
	}
	addr, err := p.AwaitReady("ready ")
	if _, _, serr := net.SplitHostPort(addr); err == nil && serr != nil {
		err = fmt.Errorf("the sink did not start (it printed %q)", "ready "+addr)
	}
	if err != nil {
		p.Close()
		return nil, err
	}
	go func() { _, _ = io.Copy(io.Discard, p.Output) }()
	return &Child{Addr: addr, Procs: many, TLS: rc, WS: ws, p: p}, nil
}

// Broker is the address a client of the run dials: host:port over TCP, or a URL
// (mqtts://, ws://, wss://) for the other transports.
func (c *Child) Broker() string {
	switch {
	case c.WS && c.TLS != nil:
		return "wss://" + c.Addr + DefaultWSPath
	case c.WS:
		return "ws://" + c.Addr + DefaultWSPath
	case c.TLS != nil:
		return "mqtts://" + c.Addr
	}
	return c.Addr
}

// Pid is the process id of the sink (of its parent with several processes).
func (c *Child) Pid() int { return c.p.Pid() }

// Stop stops the sink (SIGTERM, then SIGKILL after 15 s).
func (c *Child) Stop() {
	c.p.Close()
	if c.dir != "" {
		_ = os.RemoveAll(c.dir)
	}
}
