package network

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mqblast/mqblast/internal/child"
	"github.com/mqblast/mqblast/internal/fail"
	"github.com/mqblast/mqblast/internal/secret"
	"github.com/mqblast/mqblast/run/spec"
	"github.com/mqblast/mqblast/tuning"
	"github.com/mqblast/mqblast/tuning/netemu"
)

// netBrokerPort is the port the broker listens on in the emulator's broker namespace.
const netBrokerPort = "1883"

// ParseProfile reads a network profile; an error is a usage error.
func ParseProfile(s string) (tuning.Profile, error) {
	p, err := tuning.ParseProfile(s)
	if err != nil {
		return p, fail.Mark(fail.ErrUsage, err)
	}
	return p, nil
}

// NetemTarget parses --to (an address, or host:port of a broker) and finds --dev.
func NetemTarget(to, dev string) (netip.Addr, string, error) {
	if to == "" {
		return netip.Addr{}, "", fail.Mark(fail.ErrUsage, errors.New("--to ADDR is required: the broker's IP address"))
	}
	host := to
	if h, _, err := net.SplitHostPort(to); err == nil {
		host = h
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, "", fail.Mark(fail.ErrUsage, fmt.Errorf("--to %q: want the broker's IP address (192.0.2.10 or [2001:db8::1]:1883)", to))
	}
	if dev != "" {
		return addr, dev, nil
	}
	out, err := exec.Command("ip", "route", "get", addr.String()).CombinedOutput()
	if err != nil {
		return addr, "", fmt.Errorf("cannot find the interface toward %s (ip route get): %w: %s; give --dev", addr, err, strings.TrimSpace(string(out)))
	}
	f := strings.Fields(string(out))
	for i := 0; i+1 < len(f); i++ {
		if f[i] == "dev" {
			return addr, f[i+1], nil
		}
	}
	return addr, "", fmt.Errorf("ip route get %s names no interface: give --dev", addr)
}

// ApplyNetem runs plan.Apply after checking root and netem, clearing again on failure.
func ApplyNetem(out io.Writer, p tuning.Profile, plan tuning.NetemPlan, addr netip.Addr) error {
	if os.Geteuid() != 0 {
		return errors.New("net apply changes the host's qdiscs and needs root; try --dry-run to see the commands")
	}
	if err := tuning.NetemAvailable(); err != nil {
		return fmt.Errorf("%w; 'mqblast run --net PROFILE' and 'mqblast net emulate' need no netem", err)
	}
	if err := tuning.RunCommands(plan.Apply, false); err != nil {
		_ = tuning.RunCommands(plan.Clear, true)
		return fmt.Errorf("cannot apply %s (cleared again): %w", p, err)
	}
	fmt.Fprintf(out, "applied %s toward %s on %s; clear it with: mqblast net clear --to %s\n", p, addr, plan.Dev, addr)
	return nil
}

// startLink removes what dead mqblast processes left (removeLeftovers) and starts a link.
func startLink(w io.Writer, p tuning.Profile, clients int, normal bool) (*netemu.Link, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("the packet emulator creates network namespaces and needs root")
	}
	left, err := removeLeftovers(false)
	if len(left) > 0 {
		fmt.Fprintf(w, "removed what a run that is gone left: %s\n", strings.Join(left, " "))
	}
	if err != nil {
		return nil, err
	}
	l, err := netemu.Start(netemu.Config{Profile: p, ClientAddrs: clients, NormalPriority: normal})
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "network profile %s through the packet emulator: broker namespace %s (%s), client namespace %s (%s)\n",
		p, l.BrokerNS(), l.BrokerAddr(), l.ClientNS(), l.ClientAddrs()[0])
	return l, nil
}

// startNetBroker runs shell in the broker namespace (output to w) and waits until something
// accepts on BrokerAddr:port, for at most 10 s. The shell runs under mqblast's guard, tied
// to this process: when this process dies, the guard ends the shell's whole process group
// (child.Guard).
func startNetBroker(ctx context.Context, w io.Writer, l *netemu.Link, exe, shell, port string) error {
	exe, err := child.Exe(exe)
	if err != nil {
		return fmt.Errorf("cannot find this executable to guard the broker: %w", err)
	}
	ns := l.BrokerCommand(ctx, "sh", "-c", shell)
	b := exec.CommandContext(ctx, exe, child.GuardArgs(append([]string{ns.Path}, ns.Args[1:]...))...)
	b.Cancel = func() error { return b.Process.Signal(syscall.SIGTERM) } // the guard ends the group
	b.Env = secret.Env(os.Environ(), "")                                 // the broker password is the client's business
	b.Stdout, b.Stderr = w, w
	release, err := child.StartTied(b, syscall.SIGTERM)
	if err != nil {
		return fmt.Errorf("cannot start the broker in %s: %w", l.BrokerNS(), err)
	}
	exited := make(chan error, 1)
	go func() { exited <- b.Wait(); release() }()
	addr := net.JoinHostPort(l.BrokerAddr().String(), port)
	for deadline := time.Now().Add(10 * time.Second); ; {
		select {
		case err := <-exited:
			if err == nil {
				err = errors.New("exit status 0")
			}
			return fmt.Errorf("the broker command %q ended before it listened on %s: %w", shell, addr, err)
		default:
		}
		dctx, cancel := context.WithTimeout(ctx, time.Second)
		c, err := l.Dial(dctx, "tcp", addr)
		cancel()
		if err == nil {
			_ = c.Close()
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("the broker command %q does not accept on %s after 10 s: %w", shell, addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// runInClient runs argv in the client namespace with stdio and returns its exit status
// (ExitStatus). On ctx's end (Ctrl-C, SIGTERM) it passes SIGINT on, so that a `mqblast run`
// there writes its partial result, and kills it 15 s later.
func runInClient(ctx context.Context, l *netemu.Link, argv []string, env []string, files []*os.File, stdio Stdio) error {
	c := l.ClientCommand(context.Background(), argv[0], argv[1:]...)
	c.Stdin, c.Stdout, c.Stderr = stdio.In, stdio.Out, stdio.Err
	c.Env = append(os.Environ(), env...)
	c.ExtraFiles = files
	// Tied: the command gets SIGTERM when this process dies (`ip netns exec` execs it), and
	// an mqblast command the pipe's EOF too.
	release, err := child.StartTied(c, syscall.SIGTERM)
	if err != nil {
		return fmt.Errorf("cannot start %q in %s: %w", argv[0], l.ClientNS(), err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait(); release() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = c.Process.Signal(syscall.SIGINT)
		select {
		case err = <-done:
		case <-time.After(15 * time.Second):
			_ = c.Process.Kill()
			err = <-done
		}
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() { // a shell's code for it
			return &fail.ExitStatus{Code: 128 + int(ws.Signal()), Err: fmt.Errorf("%s was killed by signal %s",
				filepath.Base(argv[0]), strings.TrimPrefix(unix.SignalName(ws.Signal()), "SIG"))}
		}
		code := ee.ExitCode()
		return &fail.ExitStatus{Code: code, Err: fmt.Errorf("%s exited with code %d", filepath.Base(argv[0]), code)}
	}
	return err
}

// commandError says why the command name cannot be started, nil if it can. It is asked
// before the namespaces are made: under `ip netns exec` a command that cannot start is
// only ip's exit code 1.
func commandError(name string) error {
	_, err := exec.LookPath(name)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, exec.ErrNotFound):
		return fail.Mark(fail.ErrUsage, fmt.Errorf("cannot start %q: not found in PATH (give its path)", name))
	case errors.Is(err, fs.ErrNotExist):
		return fail.Mark(fail.ErrUsage, fmt.Errorf("cannot start %q: no such file", name))
	case errors.Is(err, fs.ErrPermission):
		return fail.Mark(fail.ErrUsage, fmt.Errorf("cannot start %q: not an executable file (chmod +x it)", name))
	}
	return fail.Mark(fail.ErrUsage, fmt.Errorf("cannot start %q: %w", name, err))
}

// EmulateOptions are the settings of Emulate.
type EmulateOptions struct {
	Profile tuning.Profile
	// BrokerCmd runs a broker in the broker namespace (sh -c).
	BrokerCmd string
	// ClientAddrs is the number of addresses of the client namespace.
	ClientAddrs int
	// NormalPriority keeps the emulator thread in the normal scheduling class.
	NormalPriority bool
	// Stats, if set, is the file the emulator's counters are written to as JSON.
	Stats string
	// Client is the command to run in the client namespace; without one, Emulate runs
	// until ctx ends.
	Client []string
	// Stdio is the client command's.
	Stdio Stdio
	// Log takes the notices and the emulator's counters.
	Log io.Writer
}

// Stdio are the standard streams of a command the run starts.
type Stdio struct {
	In       io.Reader
	Out, Err io.Writer
}

// Emulate runs the packet emulator between a broker namespace and a client namespace as o
// says; a client command's exit status is its error (ExitStatus).
func Emulate(ctx context.Context, o EmulateOptions) error {
	w := o.Log
	p, ef, client := o.Profile, o, o.Client
	if len(client) > 0 {
		if err := commandError(client[0]); err != nil {
			return err
		}
	}
	l, err := startLink(w, p, ef.ClientAddrs, ef.NormalPriority)
	if err != nil {
		return err
	}
	defer func() { _ = l.Close() }()
	if ef.BrokerCmd != "" {
		if err := startNetBroker(ctx, w, l, "", ef.BrokerCmd, netBrokerPort); err != nil {
			return err
		}
	}
	if len(client) > 0 {
		err = runInClient(ctx, l, client, []string{"MQBLAST_NET_BROKER=" + l.BrokerAddr().String()}, nil, o.Stdio)
	} else {
		fmt.Fprintf(w, "running until Ctrl-C; join with: ip netns exec %s COMMAND (broker: ip netns exec %s COMMAND)\n", l.ClientNS(), l.BrokerNS())
		<-ctx.Done()
	}
	writeEmuStats(w, l.Stats())
	if ef.Stats != "" {
		if werr := writeJSONFile(ef.Stats, l.Stats()); werr != nil && err == nil {
			err = werr
		}
	}
	if cerr := l.Close(); cerr != nil && err == nil {
		err = cerr
	}
	return err
}

func writeEmuStats(w io.Writer, st netemu.Stats) {
	for _, d := range []struct {
		name string
		s    netemu.DirStats
	}{{"up (client to broker)", st.Up}, {"down (broker to client)", st.Down}} {
		fmt.Fprintf(w, "emulator %s: %d frames: %d sent, %d lost by the profile, %d by a full queue, %d refused by the kernel, %d still queued; %d more dropped by the kernel before they were read; read %v after arrival and sent %v after due on average (at most %v, %v)\n",
			d.name, d.s.Frames, d.s.Sent, d.s.Lost, d.s.Overflow, d.s.SendErrors, d.s.Queued, d.s.KernelDrops, d.s.ReadLag/time.Duration(max(d.s.Frames, 1)),
			d.s.Late/time.Duration(max(d.s.Sent, 1)), d.s.MaxReadLag, d.s.MaxLate)
	}
	fmt.Fprintf(w, "emulator CPU: %v for %d frames (%v per frame, %d wakes, SCHED_FIFO %v)\n", st.CPU.Round(time.Millisecond),
		st.Up.Frames+st.Down.Frames, st.CPUPerFrame(), st.Wakes, st.Realtime)
}

func writeJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// netDirPrefix starts the name of a run --net's temporary directory (its Mosquitto config)
// in os.TempDir(): the owner's pid follows, then "-" and a random number, so that net clear
// can tell the directories of runs that are gone (leftoverDirs).
const netDirPrefix = "mqblast-net-"

// leftoverDirs returns the temporary directories of runs --net whose process is gone: the
// directories this user owns named netDirPrefix<pid>-<n>, pid no live process.
func leftoverDirs() []string {
	ents, err := os.ReadDir(os.TempDir())
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		pid, n, ok := strings.Cut(strings.TrimPrefix(e.Name(), netDirPrefix), "-")
		if !strings.HasPrefix(e.Name(), netDirPrefix) || !ok || !isDigits(pid) || !isDigits(n) {
			continue
		}
		p := filepath.Join(os.TempDir(), e.Name())
		fi, err := os.Lstat(p)
		if err != nil || !fi.IsDir() {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Geteuid() {
			continue
		}
		if id, err := strconv.Atoi(pid); err == nil && !netemu.Alive(id) {
			out = append(out, p)
		}
	}
	return out
}

func isDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// removeLeftovers removes the emulator namespaces (all: those of running processes too)
// and the temporary directories of runs --net whose process is gone, and returns what it
// removed.
func removeLeftovers(all bool) ([]string, error) {
	left, err := netemu.Leftovers(all)
	if err != nil {
		return nil, err
	}
	var errs []error
	if err := netemu.Remove(left); err != nil {
		errs = append(errs, err)
	}
	for _, d := range leftoverDirs() {
		if err := os.RemoveAll(d); err != nil {
			errs = append(errs, err)
			continue
		}
		left = append(left, d)
	}
	return left, errors.Join(errs...)
}

// mosquittoCommand writes a Mosquitto config listening on BrokerAddr:port (otherwise
// Mosquitto's defaults, quiet but for errors and warnings) in a new temporary directory and
// returns the command that runs it and the directory.
func mosquittoCommand(port string) (shell, dir string, err error) {
	bin, err := exec.LookPath("mosquitto")
	if err != nil {
		if bin, err = exec.LookPath("/usr/sbin/mosquitto"); err != nil {
			return "", "", fail.Mark(fail.ErrUsage, spec.Errorf("net.broker_cmd", "{net} runs a broker behind the packet emulator: install mosquitto (apt-get install mosquitto) or give {net.broker_cmd}"))
		}
	}
	if dir, err = os.MkdirTemp("", netDirPrefix+strconv.Itoa(os.Getpid())+"-"); err != nil {
		return "", "", err
	}
	conf := filepath.Join(dir, "mosquitto.conf")
	body := fmt.Sprintf("listener %s %s\nallow_anonymous true\nmax_connections -1\npersistence false\nlog_dest stderr\nlog_type error\nlog_type warning\n",
		port, netemu.BrokerAddr)
	if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
		return "", dir, err
	}
	return fmt.Sprintf("exec %s -c %s", bin, conf), dir, nil
}

// Clear removes what ApplyNetem put on dev (the interface toward to, when to is given),
// then the network namespaces of the packet emulator whose mqblast process is gone (with
// all, those of running ones too) and the temporary directories of runs --net that are
// gone, saying what it removed on w.
func Clear(w io.Writer, to, dev string, all bool) error {
	if os.Geteuid() != 0 {
		return errors.New("net clear changes the host's network setup and needs root")
	}
	var errs []error
	if to != "" || dev != "" {
		addr := netip.MustParseAddr("192.0.2.1") // PlanNetem wants one; Clear does not use it
		var err error
		if to != "" {
			if addr, dev, err = NetemTarget(to, dev); err != nil {
				return err
			}
		}
		plan, err := tuning.PlanNetem(tuning.Profile{}, dev, addr)
		if err != nil {
			return fail.Mark(fail.ErrUsage, err)
		}
		// Each part may be absent: report what failed for another reason only.
		for _, c := range plan.Clear {
			if err := tuning.RunCommands([][]string{c}, false); err != nil && !strings.Contains(err.Error(), "Cannot find") &&
				!strings.Contains(err.Error(), "Invalid handle") && !strings.Contains(err.Error(), "No such file") &&
				!strings.Contains(err.Error(), "Cannot delete qdisc with handle of zero") {
				errs = append(errs, err)
			}
		}
		fmt.Fprintf(w, "cleared netem on %s\n", dev)
	}
	left, err := removeLeftovers(all)
	if err != nil {
		errs = append(errs, err)
	}
	if len(left) > 0 {
		fmt.Fprintf(w, "removed emulator namespaces and temporary directories: %s\n", strings.Join(left, " "))
	} else {
		fmt.Fprintln(w, "no emulator namespaces or temporary directories left over")
	}
	return errors.Join(errs...)
}

// Netem puts p with tc netem on the path to each of brokers (host:port or mqtt://
// URLs), saying so on w, and returns what clears it again (saying on w what it could not
// clear). It needs root and a kernel with sch_netem; what it applied before a failure is
// cleared again.
func Netem(w io.Writer, p tuning.Profile, brokers []string) (clear func(), err error) {
	var plans []tuning.NetemPlan
	clear = func() {
		for _, plan := range plans {
			if err := tuning.RunCommands(plan.Clear, true); err != nil {
				fmt.Fprintf(w, "--net: clearing netem on %s: %v\n", plan.Dev, err)
			}
		}
	}
	for _, b := range brokers {
		addr, dev, err := NetemTarget(strings.TrimPrefix(strings.TrimPrefix(b, "mqtt://"), "tcp://"), "")
		if err != nil {
			clear()
			return nil, err
		}
		plan, err := tuning.PlanNetem(p, dev, addr)
		if err != nil {
			clear()
			return nil, fail.Mark(fail.ErrUsage, spec.Errorf("net", "{net}: %v", err))
		}
		plans = append(plans, plan)
		if err := ApplyNetem(w, p, plan, addr); err != nil {
			clear()
			return nil, err
		}
	}
	return clear, nil
}

// BrokerPort is the port a broker listens on behind the emulator unless told otherwise.
const BrokerPort = netBrokerPort

// Emulator is the packet emulator between a broker namespace, with a broker running in it,
// and a client namespace.
type Emulator struct {
	l    *netemu.Link
	w    io.Writer
	port string
	dir  string // the broker's temporary directory ("": none)
}

// StartEmulator starts the packet emulator with profile p and runs the broker in its
// broker namespace: shell (sh -c), or Mosquitto listening on port when shell is "", under
// the guard of the mqblast binary exe ("": this one). It waits until the broker accepts.
// Notices go to w.
func StartEmulator(ctx context.Context, w io.Writer, p tuning.Profile, exe, shell, port string) (*Emulator, error) {
	e := &Emulator{w: w, port: port}
	if shell == "" {
		var err error
		if shell, e.dir, err = mosquittoCommand(port); err != nil {
			return nil, err
		}
	}
	l, err := startLink(w, p, 1, false)
	if err != nil {
		e.removeDir()
		return nil, err
	}
	e.l = l
	if err := startNetBroker(ctx, w, l, exe, shell, port); err != nil {
		_ = e.Close()
		return nil, err
	}
	return e, nil
}

// Broker is the broker's address behind the emulator, host:port.
func (e *Emulator) Broker() string { return net.JoinHostPort(e.l.BrokerAddr().String(), e.port) }

// Run runs argv in the client namespace with env added to this process's environment,
// files as its descriptors 3 and on, and stdio; its exit status is the error
// (fail.ExitStatus). On ctx's end it passes SIGINT on, and kills it 15 s later.
func (e *Emulator) Run(ctx context.Context, argv, env []string, files []*os.File, stdio Stdio) error {
	return runInClient(ctx, e.l, argv, env, files, stdio)
}

// Close writes what the emulator did on w, removes its namespaces and the broker's
// directory.
func (e *Emulator) Close() error {
	var err error
	if e.l != nil {
		writeEmuStats(e.w, e.l.Stats())
		err = e.l.Close()
		e.l = nil
	}
	e.removeDir()
	return err
}

func (e *Emulator) removeDir() {
	if e.dir != "" {
		_ = os.RemoveAll(e.dir)
		e.dir = ""
	}
}

// BrokerHost is the broker namespace's address.
func BrokerHost() netip.Addr { return netemu.BrokerAddr }
