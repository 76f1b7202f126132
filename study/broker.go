package study

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mqblast/mqblast/internal/brokers"
	"github.com/mqblast/mqblast/internal/child"
	"github.com/mqblast/mqblast/internal/secret"
	"github.com/mqblast/mqblast/tuning"
)

// brokerProc is one broker of a running study: its address and, when the study starts
// it, its process.
type brokerProc struct {
	b    Broker
	dir  string // DIR/brokers/NAME: its config and log
	exe  string // the mqblast binary, for {mqblast}
	addr string // host:port with {port} replaced
	net  *network
	plan *brokers.Start // rabbitmq, aedes, gmqtt: its files and start line

	cmd     *exec.Cmd
	done    chan struct{} // closed when cmd has exited
	waitErr error
	exited  bool // the start command returned before the broker was ready (a daemon)
	startAt time.Time
}

// newBrokerProc picks the broker's port (a free one for {port}) and its directory. Behind
// the emulator (n has a link), a broker the study starts listens on the broker namespace's
// address instead of the host its address names.
func newBrokerProc(b Broker, dir, exe string, n *network) (*brokerProc, error) {
	p := &brokerProc{b: b, dir: filepath.Join(dir, "brokers", b.Name), exe: exe, addr: b.Address, net: n}
	host, port, _ := net.SplitHostPort(b.Address)
	inLink := n.inLink(p)
	if inLink {
		host = n.brokerHost()
	}
	if port == "{port}" {
		var pn int
		var err error
		if inLink {
			pn, err = n.freePort()
		} else {
			pn, err = freePort(host)
		}
		if err != nil {
			return nil, fmt.Errorf("broker %s: cannot find a free port on %s: %w", b.Name, host, err)
		}
		port = strconv.Itoa(pn)
	}
	p.addr = net.JoinHostPort(host, port)
	if foreign(b.Type) {
		in, err := brokers.Find(b.Type)
		if err != nil {
			return nil, fmt.Errorf("broker %s: %w", b.Name, err)
		}
		pn, _ := strconv.Atoi(port)
		more := func() (int, error) { return freePort("127.0.0.1") }
		if inLink {
			more = n.freePort
		}
		if p.plan, err = in.Plan(brokers.Config{Dir: p.dir, Host: host, Port: pn, FreePort: more}); err != nil {
			return nil, fmt.Errorf("broker %s: %w", b.Name, err)
		}
	}
	return p, nil
}

// CheckInstalled refuses a campaign whose brokers of internal/brokers' kinds are not
// installed on this host, with the command that installs each.
func CheckInstalled(c *Campaign) error {
	var errs []error
	for _, b := range c.Brokers {
		if foreign(b.Type) {
			if _, err := brokers.Find(b.Type); err != nil {
				errs = append(errs, fmt.Errorf("broker %s: %w", b.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// dial opens a TCP connection to the broker from the client's side.
func (p *brokerProc) dial(timeout time.Duration) (net.Conn, error) {
	if p.net.inLink(p) {
		return p.net.dial(p.addr, timeout)
	}
	return net.DialTimeout("tcp", p.addr, timeout)
}

func freePort(host string) (int, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// starts reports whether the study starts (and so can restart) the broker itself.
func (p *brokerProc) starts() bool { return p.b.Type != TypeExternal }

// expand replaces the placeholders of a command: {port}, {host}, {addr}, {mqblast},
// {dir} (the broker's directory in the study) and {conf} (mosquitto's config there).
func (p *brokerProc) expand(s string) string {
	host, port, _ := net.SplitHostPort(p.addr)
	return strings.NewReplacer("{port}", port, "{host}", host, "{addr}", p.addr, "{mqblast}", shellQuote(p.exe),
		"{dir}", shellQuote(p.dir), "{conf}", shellQuote(filepath.Join(p.dir, "mosquitto.conf"))).Replace(s)
}

// StartCommand is the shell command that starts the broker, placeholders expanded; "" for
// an external broker.
func (p *brokerProc) startCommand() string {
	switch p.b.Type {
	case TypeEmbedded:
		if p.net.inLink(p) {
			return p.expand("{mqblast} broker --listen {addr} --private-netns")
		}
		return p.expand("{mqblast} broker --listen {addr}")
	case TypeSink:
		if p.net.inLink(p) {
			return p.expand("{mqblast} sink --listen {addr} --allow-remote")
		}
		return p.expand("{mqblast} sink --listen {addr}")
	case TypeMosquitto:
		return p.expand(mosquittoBin() + " -c {conf}")
	case TypeRabbitMQ, TypeAedes, TypeGMQTT:
		return p.plan.Line
	}
	return p.expand(p.b.Start)
}

func mosquittoBin() string {
	if p, err := exec.LookPath("mosquitto"); err == nil {
		return p
	}
	return "/usr/sbin/mosquitto"
}

// start starts the broker and waits until it accepts connections.
func (p *brokerProc) start(ctx context.Context) error {
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return fmt.Errorf("broker %s: %w", p.b.Name, err)
	}
	if p.b.Type == TypeMosquitto {
		host, port, _ := net.SplitHostPort(p.addr)
		conf := fmt.Sprintf("# written by mqblast study\nlistener %s %s\nallow_anonymous true\nconnection_messages false\nlog_type error\nlog_type warning\n", port, host)
		if os.Geteuid() == 0 {
			conf += "user root\n" // keep root: the config and log live in the study's directory
		}
		if err := os.WriteFile(filepath.Join(p.dir, "mosquitto.conf"), []byte(conf), 0o644); err != nil {
			return fmt.Errorf("broker %s: %w", p.b.Name, err)
		}
	}
	if p.plan != nil {
		if err := p.plan.Write(); err != nil {
			return fmt.Errorf("broker %s: %w", p.b.Name, err)
		}
	}
	log, err := os.OpenFile(filepath.Join(p.dir, "broker.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("broker %s: %w", p.b.Name, err)
	}
	line := p.startCommand()
	argv := []string{"/bin/sh", "-c", line}
	if p.net.inLink(p) {
		argv = p.net.wrapBroker(argv)
	}
	fmt.Fprintf(log, "--- %s: %s\n", time.Now().UTC().Format(time.RFC3339), line)
	// Under mqblast's guard, tied to the study: when the study dies (SIGKILL, the OOM
	// killer), the guard ends the broker's whole group (child.Guard).
	c := exec.Command(p.exe, child.GuardArgs(argv)...)
	c.Env = secret.Env(os.Environ(), "") // the broker password is the cells' business
	c.Stdout, c.Stderr = log, log
	// Its own process group: a Ctrl-C at the terminal reaches the study, which stops the
	// broker after the cell, and the study can stop the whole group (the guard, sh and its
	// child).
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	release, err := child.StartTied(c, syscall.SIGTERM)
	if err != nil {
		_ = log.Close()
		return fmt.Errorf("broker %s: cannot start %q: %w", p.b.Name, line, err)
	}
	p.cmd, p.done, p.exited, p.startAt = c, make(chan struct{}), false, time.Now()
	go func() { p.waitErr = c.Wait(); release(); _ = log.Close(); close(p.done) }()
	return p.awaitReady(ctx, line)
}

// awaitReady waits until the broker's address accepts a TCP connection; for rabbitmq,
// aedes and gmqtt, until it answers a CONNECT with a CONNACK (RabbitMQ's listener may
// accept before its MQTT plugin is ready).
func (p *brokerProc) awaitReady(ctx context.Context, what string) error {
	deadline := time.Now().Add(p.b.StartTimeout)
	for {
		conn, err := p.dial(500 * time.Millisecond)
		if err == nil && p.plan != nil {
			err = brokers.Handshake(conn, 2*time.Second)
			_ = conn.Close()
			if err == nil {
				return nil
			}
		} else if err == nil {
			_ = conn.Close()
			return nil
		}
		if p.done != nil {
			select {
			case <-p.done:
				if p.waitErr != nil || p.b.Type != TypeCommand {
					return fmt.Errorf("broker %s: %q exited before it listened on %s (%v); see %s",
						p.b.Name, what, p.addr, exitText(p.waitErr), filepath.Join(p.dir, "broker.log"))
				}
				p.exited = true // a command that forks a daemon and returns 0: keep waiting for the port
			default:
			}
		}
		if time.Now().After(deadline) {
			p.kill()
			return fmt.Errorf("broker %s: nothing listens on %s %v after %q (start_timeout_sec); see %s",
				p.b.Name, p.addr, p.b.StartTimeout, what, filepath.Join(p.dir, "broker.log"))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// running reports whether the process the study started is still there (for a command
// that daemonized: whether its address still accepts connections).
func (p *brokerProc) running() (bool, string) {
	if p.cmd == nil {
		return true, ""
	}
	if p.exited {
		conn, err := p.dial(time.Second)
		if err != nil {
			return false, fmt.Sprintf("nothing listens on %s any more", p.addr)
		}
		_ = conn.Close()
		return true, ""
	}
	select {
	case <-p.done:
		return false, exitText(p.waitErr)
	default:
		return true, ""
	}
}

// pid is the process to sample: the broker's pid option, else the listener on its port
// (behind the emulator: in the broker's namespace), else the process the study started.
func (p *brokerProc) pid(ctx context.Context) int {
	if p.b.PID > 0 {
		return p.b.PID
	}
	if p.net.inLink(p) { // another namespace: its listener is found from inside it
		var pid int
		if _, port, err := net.SplitHostPort(p.addr); err == nil {
			if n, err := strconv.Atoi(port); err == nil {
				_ = p.net.link.InBroker(func() (err error) { pid, err = tuning.FindListener(ctx, n); return err })
			}
		}
		if pid > 0 {
			return pid
		}
		if p.cmd != nil && !p.exited { // a start script with two children (RabbitMQ's) stops here
			return leafPID(p.cmd.Process.Pid)
		}
		return 0
	}
	if _, port, err := net.SplitHostPort(p.addr); err == nil {
		if n, err := strconv.Atoi(port); err == nil && isLocal(p.addr) {
			if pid, err := tuning.FindListener(ctx, n); err == nil {
				return pid
			}
		}
	}
	if p.cmd != nil && !p.exited {
		return leafPID(p.cmd.Process.Pid)
	}
	return 0
}

// stop stops what the study started: the stop command when there is one, then SIGTERM to
// the broker's process group, SIGKILL after 10 s; it
// returns once no process of the group is left.
func (p *brokerProc) stop() error {
	if !p.starts() {
		return nil
	}
	var err error
	if p.b.Stop != "" {
		err = runShell(context.Background(), p.expand(p.b.Stop), 30*time.Second)
	}
	if p.cmd == nil {
		return err
	}
	if !p.exited {
		// The whole group: sh (and ip netns exec) may end before the broker under it, which
		// must be gone before the next cell starts one on the same port. SIGTERM goes to the
		// guard, which passes it on to the group once (a second one makes some brokers skip
		// their shutdown); SIGKILL below goes to the whole group.
		pg := p.cmd.Process.Pid
		_ = syscall.Kill(pg, syscall.SIGTERM)
		deadline := time.After(10 * time.Second)
	wait:
		for {
			select {
			case <-p.done:
				if !groupAlive(pg) {
					break wait
				}
			case <-deadline:
				_ = syscall.Kill(-pg, syscall.SIGKILL)
				<-p.done
				for groupAlive(pg) {
					time.Sleep(20 * time.Millisecond)
				}
				break wait
			default:
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	p.cmd = nil
	return err
}

// groupAlive reports whether a process of group pg is left, zombies aside.
func groupAlive(pg int) bool { return len(child.GroupLeft(pg)) > 0 }

// kill ends the broker's process group at once and waits for it.
func (p *brokerProc) kill() {
	if p.cmd == nil || p.exited {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// restart runs the broker's restart command and waits for it to listen again.
func (p *brokerProc) restart(ctx context.Context) error {
	line := p.expand(p.b.Restart)
	if err := runShell(ctx, line, 60*time.Second); err != nil {
		return fmt.Errorf("broker %s: restart %q: %w", p.b.Name, line, err)
	}
	return p.awaitReady(ctx, line)
}

// runShell runs a stop or restart command to its end.
func runShell(ctx context.Context, line string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "/bin/sh", "-c", line).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%q: %w: %s", line, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// exitText says how a process ended, from the error of its Wait: "exit status 3", "killed
// by signal KILL".
func exitText(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "killed by signal " + signalName(ws.Signal())
		}
		if c := ee.ExitCode(); c > 128 && c < 160 { // a shell's child killed by a signal
			return fmt.Sprintf("exit status %d: its process was killed by signal %s", c, signalName(syscall.Signal(c-128)))
		}
		return "exit status " + strconv.Itoa(ee.ExitCode())
	}
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// signalName is a signal's name as kill(1) takes it: KILL, TERM (Signal.String says
// "killed", "terminated").
func signalName(sig syscall.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return strings.TrimPrefix(n, "SIG")
	}
	return strconv.Itoa(int(sig))
}

// isLocal reports whether a host:port is on loopback or an address of this host.
func isLocal(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	if host == "localhost" || (ip != nil && (ip.IsLoopback() || ip.IsUnspecified())) {
		return true
	}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.Equal(ip) {
			return true
		}
	}
	return false
}

// shellQuote quotes s for /bin/sh when it needs quoting.
func shellQuote(s string) string { return brokers.Quote(s) }
