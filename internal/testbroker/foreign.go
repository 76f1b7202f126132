package testbroker

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/brokers"
	"github.com/mqblast/mqblast/internal/child"
	"github.com/mqblast/mqblast/internal/tier"
)

// Foreign is a running broker of internal/brokers' kinds: RabbitMQ, aedes or gmqtt.
type Foreign struct {
	Kind, Version string
	Addr          string        // host:port of its MQTT listener
	Dir           string        // its configuration, data and logs
	Log           string        // what its start line wrote to stdout and stderr
	Ready         time.Duration // from its start until a CONNECT got a CONNACK
	start         *brokers.Start
	cmd           *exec.Cmd
	done          chan struct{}
}

// NeedForeign returns the broker of kind installed on this host, skipping (or in CI
// failing) the test with the command that installs it when it is not.
func NeedForeign(t testing.TB, kind string) *brokers.Installation {
	t.Helper()
	tier.Integration(t)
	in, err := brokers.Find(kind)
	if errors.Is(err, brokers.ErrNotInstalled) {
		if os.Getenv("CI") != "" {
			t.Fatalf("%v (.ci/run installs it: scripts/install-brokers.sh %s)", err, kind)
		}
		t.Skipf("%v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// StartRabbitMQ starts RabbitMQ with its MQTT plugin (MQTT 3.1.1 only in 3.10) on a free
// loopback port, with its own node name, Mnesia, logs and epmd, and stops it when the
// test ends. It takes some 10 s to accept MQTT.
func StartRabbitMQ(t testing.TB) *Foreign { t.Helper(); return StartForeign(t, brokers.RabbitMQ) }

// StartAedes starts aedes 1.x (Node.js) on a free loopback port and stops it when the
// test ends.
func StartAedes(t testing.TB) *Foreign { t.Helper(); return StartForeign(t, brokers.Aedes) }

// StartGMQTT starts gmqttd on a free loopback port and stops it when the test ends.
func StartGMQTT(t testing.TB) *Foreign { t.Helper(); return StartForeign(t, brokers.GMQTT) }

// StartForeign starts the broker of kind on a free loopback port, waits until it accepts
// MQTT (a CONNECT gets a CONNACK) and stops it when the test ends; the test fails when
// the stop leaves a process of the broker's behind.
func StartForeign(t testing.TB, kind string) *Foreign {
	t.Helper()
	in := NeedForeign(t, kind)
	dir := t.TempDir()
	// A port FreePort found free can be taken before the broker binds it: the broker then
	// exits, and it is started again on other ports.
	for attempt := 1; ; attempt++ {
		f := startForeign(t, in, filepath.Join(dir, fmt.Sprint(attempt)))
		err := f.awaitReady(in.StartTimeout)
		if err == nil {
			t.Logf("%s %s accepts MQTT on %s after %v", kind, in.Version, f.Addr, f.Ready.Round(time.Millisecond))
			t.Cleanup(func() {
				if err := f.Stop(); err != nil {
					t.Error(err)
				}
			})
			return f
		}
		_ = f.Stop()
		logs := f.logs()
		if attempt < 3 && strings.Contains(logs, "in use") { // EADDRINUSE: "address already in use", "eaddrinuse"
			t.Logf("%s on %s: a port was taken; starting it on other ports", kind, f.Addr)
			continue
		}
		t.Fatalf("%s: %v; its logs:\n%s", kind, err, logs)
	}
}

func startForeign(t testing.TB, in *brokers.Installation, dir string) *Foreign {
	t.Helper()
	host := "127.0.0.1"
	st, err := in.Plan(brokers.Config{Dir: dir, Host: host, Port: FreePort(t, host),
		FreePort: func() (int, error) { return FreePort(t, host), nil }})
	if err == nil {
		err = st.Write()
	}
	if err != nil {
		t.Fatal(err)
	}
	f := &Foreign{Kind: in.Kind, Version: in.Version, Addr: st.Addr, Dir: dir, Log: filepath.Join(dir, "broker.log"), start: st}
	log, err := os.Create(f.Log)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close() //nolint:errcheck
	f.cmd = exec.Command("/bin/sh", "-c", st.Line)
	f.cmd.Stdout, f.cmd.Stderr = log, log
	f.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := f.cmd.Start(); err != nil {
		t.Fatalf("cannot start %s (%s): %v", in.Kind, st.Line, err)
	}
	f.done = make(chan struct{})
	go func() { _ = f.cmd.Wait(); close(f.done) }()
	return f
}

// awaitReady waits until the broker answers a CONNECT with a CONNACK.
func (f *Foreign) awaitReady(timeout time.Duration) error {
	t0 := time.Now()
	deadline := t0.Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-f.done:
			return fmt.Errorf("%q exited before it accepted MQTT on %s (%s)", f.start.Line, f.Addr, f.cmd.ProcessState)
		default:
		}
		c, err := net.DialTimeout("tcp", f.Addr, 200*time.Millisecond)
		if err == nil {
			err = brokers.Handshake(c, 2*time.Second)
			_ = c.Close()
			if err == nil {
				f.Ready = time.Since(t0)
				return nil
			}
		}
		last = err
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s does not accept MQTT on %s after %v: %w", f.Kind, f.Addr, timeout, last)
}

// Stop stops the broker: SIGTERM to its process group, SIGKILL after 30 s. It returns an
// error naming what was left when a process of the group outlived the stop or had to be
// killed.
func (f *Foreign) Stop() error {
	pg := f.cmd.Process.Pid
	_ = syscall.Kill(-pg, syscall.SIGTERM)
	var err error
	select {
	case <-f.done:
	case <-time.After(30 * time.Second):
		err = fmt.Errorf("%s did not stop within 30 s of SIGTERM: killed", f.Kind)
		_ = syscall.Kill(-pg, syscall.SIGKILL)
		<-f.done
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := child.GroupLeft(pg)
		if len(left) == 0 {
			return err
		}
		if time.Now().After(deadline) {
			var names []string
			for _, p := range left {
				names = append(names, fmt.Sprintf("%d %s", p.PID, p.Comm))
			}
			_ = syscall.Kill(-pg, syscall.SIGKILL)
			return errors.Join(err, fmt.Errorf("%s left processes behind after its stop: %s (killed)", f.Kind, strings.Join(names, ", ")))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// logs returns what the broker wrote: its start line's output and its own log file.
func (f *Foreign) logs() string {
	var b strings.Builder
	for _, p := range []string{f.Log, f.start.Log} {
		if p == "" {
			continue
		}
		if data, err := os.ReadFile(p); err == nil && len(data) > 0 {
			fmt.Fprintf(&b, "--- %s\n%s", p, tail(data, 4000))
		}
	}
	return b.String()
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
