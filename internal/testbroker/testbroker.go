// Package testbroker starts real MQTT brokers for tests: Mosquitto from the host (Debian's
// package in CI) on a free loopback port with a config the test writes, or the embedded one.
// Outside CI a missing mosquitto skips the test; in CI (CI=true) it fails it.
package testbroker

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
}

// brokerCommand is mosquitto -c conf, under nice(1) when nice > 0.
func brokerCommand(bin, conf string, nice int) *exec.Cmd {
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
	// TLS, WebSocket and WSS add a TLS listener, a WebSocket one and a WebSocket one over
	// TLS, each on its own free port, beside the plain one; the TLS ones use Certs (which
	// they need), and with RequireCert the broker asks for a client certificate its CA
	// signed (mutual TLS).
	TLS, WebSocket, WSS bool
	Certs               *Certs
	RequireCert         bool
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
	port := FreePort(t, opts.Host)
	logPath := filepath.Join(dir, "mosquitto.log")
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
	cmd := brokerCommand(bin, confPath, opts.Nice)
	if err := cmd.Start(); err != nil {
		t.Fatalf("cannot start mosquitto: %v", err)
	}
	m.Addr, m.Cmd, m.Log, m.bin, m.conf, m.nice = net.JoinHostPort(opts.Host, fmt.Sprint(port)), cmd, logPath, bin, confPath, opts.Nice
	t.Cleanup(func() {
		_ = m.Cmd.Process.Kill()
		_ = m.Cmd.Wait()
		if t.Failed() {
			if b, err := os.ReadFile(logPath); err == nil && len(b) > 0 {
				t.Logf("mosquitto log:\n%s", b)
			}
		}
	})
	WaitListening(t, m.Addr, 5*time.Second)
	for _, a := range []string{m.TLSAddr, m.WSAddr, m.WSSAddr} {
		if a != "" {
			WaitListening(t, a, 5*time.Second)
		}
	}
	return m
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
	cmd := brokerCommand(m.bin, m.conf, m.nice)
	if err := cmd.Start(); err != nil {
		t.Fatalf("cannot restart mosquitto: %v", err)
	}
	m.Cmd = cmd
	WaitListening(t, m.Addr, 5*time.Second)
}

// FreePort returns a TCP port that is free on host now.
func FreePort(t testing.TB, host string) int {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatalf("cannot find a free port on %s: %v", host, err)
	}
	defer ln.Close() //nolint:errcheck
	return ln.Addr().(*net.TCPAddr).Port
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
