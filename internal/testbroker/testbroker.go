// Package testbroker starts real MQTT brokers for tests: Mosquitto from the host (Debian's
// package in CI) on a free loopback port with a config the test writes, or the embedded one.
// Outside CI a missing mosquitto skips the test; in CI (CI=true) it fails it. Beside them,
// scripted servers on loopback for the paths a real broker does not take on demand: Liar
// (acknowledges everything, delivers nothing, sends strays) and Router (routes, and
// acknowledges and delivers by a script of publisher and sequence numbers; with a Script,
// answers with the reason codes, properties and DISCONNECTs of a broker that refuses, lacks
// or ends things).
package testbroker

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/tier"
)

// Mosquitto is a running Mosquitto instance.
type Mosquitto struct {
	Addr string // host:port
	// The TLS and WebSocket listeners' host:port, when Options asked for them.
	TLSAddr, WSAddr, WSSAddr string
	Cmd                      *exec.Cmd
	Log                      string // path of its log file
	bin                      string
	conf                     string
	nice                     int
	netns                    string
	cpus                     []int
	quota                    float64
	nofile                   uint64
}

// brokerCommand is mosquitto -c conf, under nice(1) when nice > 0, in the network
// namespace netns when it is not "" (ip netns exec, which execs it: the command's process
// is Mosquitto's).
func brokerCommand(bin, conf string, nice int, netns string) *exec.Cmd {
	if netns != "" {
		return exec.Command("ip", "netns", "exec", netns, bin, "-c", conf)
	}
	if nice > 0 {
		if n, err := exec.LookPath("nice"); err == nil {
			return exec.Command(n, "-n", fmt.Sprint(nice), bin, "-c", conf)
		}
	}
	return exec.Command(bin, "-c", conf)
}

// Options configure StartMosquitto.
type Options struct {
	Host    string            // listen address, default 127.0.0.1
	Users   map[string]string // when set, anonymous clients are refused and these may log in
	Extra   []string          // more config lines
	NoDelay bool
	// Nice, when > 0, runs the broker at that lower scheduling priority (nice(1)), so that a
	// test overloading it on a shared 2-core host takes CPU from the broker, not the client.
	Nice int
	// Netns, when set, runs the broker in that network namespace (netnstest.Host's, with
	// Host its address there): a broker on a host of its own.
	Netns string
	// CPUs, when set, pins the broker to these CPUs (sched_setaffinity), so that a client
	// pinned to the others does not take turns with it on the same cores.
	CPUs []int
	// CPUQuota, when > 0, caps the broker at that share of one core (a cgroup's CPU
	// quota, over a 50 ms period): a broker whose limit lies where a test can reach it.
	// The test is skipped where no cgroup CPU controller can be written (not root).
	CPUQuota float64
	// TLS, WebSocket and WSS add a TLS listener, a WebSocket one and a WebSocket one over
	// TLS, each on its own free port, beside the plain one; the TLS ones use Certs (which
	// they need), and with RequireCert the broker asks for a client certificate its CA
	// signed (mutual TLS).
	TLS, WebSocket, WSS bool
	Certs               *Certs
	RequireCert         bool
	// NoFile, when > 0, sets the broker process's descriptor limit (RLIMIT_NOFILE, soft
	// and hard) once it runs: a broker that holds fewer connections than the client can.
	NoFile uint64
	// IdentityAsUsername makes the TLS listeners take the client certificate's common name
	// as the client's username (use_identity_as_username), which an ACL pattern's %u sees.
	IdentityAsUsername bool
}

// Need returns the path of the mosquitto binary, skipping (or in CI failing) the test when
// it is not installed.
func Need(t testing.TB) string {
	t.Helper()
	tier.Integration(t)
	for _, p := range []string{"mosquitto", "/usr/sbin/mosquitto"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("mosquitto is not installed; .ci/run installs it (apt-get install -y mosquitto)")
	}
	t.Skip("mosquitto is not installed (apt-get install -y mosquitto)")
	return ""
}

// StartMosquitto starts Mosquitto on a free port of opts.Host and stops it when the test ends.
func StartMosquitto(t testing.TB, opts Options) *Mosquitto {
	t.Helper()
	bin := Need(t)
	if opts.Host == "" {
		opts.Host = "127.0.0.1"
	}
	dir := t.TempDir()
	logPath := filepath.Join(dir, "mosquitto.log")
	// A port FreePort found free can be taken before Mosquitto binds it (by another test's
	// broker, or as a connection's source port when a range holds none free): Mosquitto
	// then exits with "Address already in use", and it is started again on other ports.
	for attempt := 1; ; attempt++ {
		m := startMosquitto(t, bin, dir, logPath, opts)
		if m.waitListening(5 * time.Second) {
			return m
		}
		b, _ := os.ReadFile(logPath)
		if attempt < 5 && strings.Contains(string(b), "Address already in use") {
			t.Logf("mosquitto on %s: %s; starting it on other ports", m.Addr, strings.TrimSpace(string(b)))
			_ = m.Cmd.Process.Kill()
			_ = m.Cmd.Wait()
			continue
		}
		_ = m.Cmd.Process.Kill()
		_ = m.Cmd.Wait()
		t.Fatalf("mosquitto is not listening on %s after 5s; its log:\n%s", m.Addr, b)
	}
}

// listenPort is a port for a listener of opts's broker: a free one of its host, or in a
// namespace of the test's own (where nothing else listens, and which this process cannot
// bind in) any.
func listenPort(t testing.TB, opts *Options) int {
	t.Helper()
	if opts.Netns != "" {
		return 10000 + rand.IntN(20000)
	}
	return FreePort(t, opts.Host)
}

// startMosquitto writes opts' configuration on free ports into dir and starts Mosquitto on
// it; it stops when the test ends.
func startMosquitto(t testing.TB, bin, dir, logPath string, opts Options) *Mosquitto {
	t.Helper()
	port := listenPort(t, &opts)
	_ = os.Remove(logPath)
	conf := []string{
		fmt.Sprintf("listener %d %s", port, opts.Host),
		"user root", // do not drop privileges: the config lives in the test's temp dir
		"log_dest file " + logPath,
		"log_type error",
		"log_type warning",
		"max_connections -1",
		"persistence false",
	}
	if len(opts.Users) > 0 {
		pw := filepath.Join(dir, "passwd")
		var b strings.Builder
		for u, p := range opts.Users {
			fmt.Fprintf(&b, "%s:%s\n", u, p)
		}
		if err := os.WriteFile(pw, []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		// mosquitto_passwd -U hashes the plain-text file in place.
		if out, err := exec.Command("mosquitto_passwd", "-U", pw).CombinedOutput(); err != nil {
			t.Fatalf("mosquitto_passwd: %v: %s", err, out)
		}
		conf = append(conf, "allow_anonymous false", "password_file "+pw)
	} else {
		conf = append(conf, "allow_anonymous true")
	}
	m := &Mosquitto{}
	conf = append(conf, opts.Extra...)
	conf = append(conf, transportListeners(t, &opts, m)...)
	confPath := filepath.Join(dir, "mosquitto.conf")
	if err := os.WriteFile(confPath, []byte(strings.Join(conf, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := brokerCommand(bin, confPath, opts.Nice, opts.Netns)
	if err := cmd.Start(); err != nil {
		t.Fatalf("cannot start mosquitto: %v", err)
	}
	m.Addr, m.Cmd, m.Log, m.bin, m.conf, m.nice, m.netns = net.JoinHostPort(opts.Host, fmt.Sprint(port)), cmd, logPath, bin, confPath, opts.Nice, opts.Netns
	m.cpus, m.quota, m.nofile = opts.CPUs, opts.CPUQuota, opts.NoFile
	m.confine(t)
	t.Cleanup(func() {
		_ = m.Cmd.Process.Kill()
		_ = m.Cmd.Wait()
		if t.Failed() {
			if b, err := os.ReadFile(logPath); err == nil && len(b) > 0 {
				t.Logf("mosquitto log:\n%s", b)
			}
		}
	})
	return m
}

// waitListening reports whether all of m's listeners accept TCP connections within
// timeout; it gives up early once Mosquitto has found a port taken.
func (m *Mosquitto) waitListening(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for _, a := range []string{m.Addr, m.TLSAddr, m.WSAddr, m.WSSAddr} {
		for a != "" {
			if c, err := net.DialTimeout("tcp", a, 200*time.Millisecond); err == nil {
				_ = c.Close()
				break
			}
			if b, _ := os.ReadFile(m.Log); strings.Contains(string(b), "Address already in use") || time.Now().After(deadline) {
				return false
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return true
}

// Kill stops the broker at once (SIGKILL): every client connection drops.
func (m *Mosquitto) Kill(t testing.TB) {
	t.Helper()
	_ = m.Cmd.Process.Kill()
	_ = m.Cmd.Wait()
}

// Stop stops the broker gracefully (SIGTERM): with persistence it saves its sessions and
// queued messages first.
func (m *Mosquitto) Stop(t testing.TB) {
	t.Helper()
	_ = m.Cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = m.Cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = m.Cmd.Process.Kill()
		<-done
	}
}

// Restart starts the broker again with the same configuration, on the same port.
func (m *Mosquitto) Restart(t testing.TB) {
	t.Helper()
	cmd := brokerCommand(m.bin, m.conf, m.nice, m.netns)
	if err := cmd.Start(); err != nil {
		t.Fatalf("cannot restart mosquitto: %v", err)
	}
	m.Cmd = cmd
	m.confine(t)
	WaitListening(t, m.Addr, 5*time.Second)
}

// FreePort returns a TCP port that is free on host now. It prefers one below the kernel's
// ephemeral range (ip_local_port_range), which no connection takes as its source port
// between now and the bind of whoever asked for it; and one that no other FreePort of any
// test process has handed out and still holds (claimPort), so that a broker slow to bind
// (RabbitMQ takes seconds) does not share its port with another test's broker, which
// would then answer both tests' clients.
func FreePort(t testing.TB, host string) int {
	t.Helper()
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		var lo int
		if _, err := fmt.Sscan(string(b), &lo); err == nil && lo > 20000 {
			for range 50 {
				p := 10000 + rand.IntN(lo-10000)
				if !claimPort(t, p) {
					continue
				}
				if ln, err := net.Listen("tcp", net.JoinHostPort(host, fmt.Sprint(p))); err == nil {
					_ = ln.Close()
					return p
				}
			}
		}
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatalf("cannot find a free port on %s: %v", host, err)
	}
	defer ln.Close() //nolint:errcheck
	return ln.Addr().(*net.TCPAddr).Port
}

// claimed are the ports this process's FreePort handed out: never twice.
var claimed sync.Map

// claimPort claims port p for the rest of t, against this process (claimed) and the other
// test processes (an exclusive flock on a file named for p in a directory they share, held
// until t ends); false: another holds it.
func claimPort(t testing.TB, p int) bool {
	if _, taken := claimed.LoadOrStore(p, true); taken {
		return false
	}
	dir := filepath.Join(os.TempDir(), "mqblast-test-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return true // no directory to share: this process's claims alone
	}
	f, err := os.OpenFile(filepath.Join(dir, fmt.Sprint(p)), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return true
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return false
	}
	t.Cleanup(func() { _ = f.Close() }) // the lock goes with the file
	return true
}

// WaitListening waits until addr accepts TCP connections.
func WaitListening(t testing.TB, addr string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			_ = c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is not listening after %v: %v", addr, timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
