package child

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"
)

const helperEnv = "MQBLAST_CHILD_HELPER"

// TestHelperChild is the child: with helperEnv set it acts as the mode names and exits.
func TestHelperChild(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		t.Skip("the child of the other tests")
	}
	switch mode {
	case "ready": // say ready, echo stdin lines, write a last line on SIGTERM and exit
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGTERM)
		fmt.Println("ready 127.0.0.1:1")
		fmt.Fprintln(os.Stderr, "to the log")
		go func() {
			sc := bufio.NewScanner(os.Stdin)
			for sc.Scan() {
				fmt.Println("got " + sc.Text())
			}
		}()
		<-sigs
		fmt.Println("last words")
		os.Exit(0)
	case "garbage":
		fmt.Println("something else")
		os.Exit(3)
	case "watch": // say ready, and "gone" when the parent is (WatchParent)
		gone := WatchParent()
		fmt.Printf("ready %v\n", gone != nil)
		if gone != nil {
			<-gone
			fmt.Println("gone")
		}
	case "guard": // say ready, guard sh -c $GUARD_SCRIPT, print the code and error
		fmt.Println("ready")
		code, err := Guard(context.Background(), []string{"sh", "-c", os.Getenv("GUARD_SCRIPT")}, 5*time.Second)
		fmt.Println(code, err)
	case "sleep": // say ready and sleep
		fmt.Println("ready")
		time.Sleep(time.Minute)
	case "stubborn": // ignores SIGTERM
		signal.Ignore(syscall.SIGTERM)
		fmt.Fprintln(os.Stderr, "ready")
		time.Sleep(time.Minute)
	}
	os.Exit(0)
}

func start(t *testing.T, mode string, s Spec) *Process {
	t.Helper()
	s.Name = "the " + mode + " child"
	s.Args = []string{"-test.run=^TestHelperChild$"}
	s.Env = append(os.Environ(), helperEnv+"="+mode)
	p, err := Start(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// TestReadyStdinStop: the ready line is read, stdin reaches the child, the other stream goes
// to the log, and what the child writes on its way out is still read after Stop.
func TestReadyStdinStop(t *testing.T) {
	var log strings.Builder
	p := start(t, "ready", Spec{Stdin: true, Log: &log, Signal: syscall.SIGTERM, Timeout: 5 * time.Second})
	addr, err := p.AwaitReady("ready ")
	if err != nil || addr != "127.0.0.1:1" {
		t.Fatalf("AwaitReady: %q, %v", addr, err)
	}
	if _, err := io.WriteString(p.Stdin, "hello\n"); err != nil {
		t.Fatal(err)
	}
	if line, err := p.Output.ReadString('\n'); err != nil || line != "got hello\n" {
		t.Fatalf("echo: %q, %v", line, err)
	}
	if err := p.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if rest, err := io.ReadAll(p.Output); err != nil || string(rest) != "last words\n" {
		t.Errorf("after Stop: %q, %v; want the last line", rest, err)
	}
	if log.String() != "to the log\n" {
		t.Errorf("log %q", log.String())
	}
}

// TestNotReady: a first line without the prefix is an error that quotes it.
func TestNotReady(t *testing.T) {
	p := start(t, "garbage", Spec{})
	_, err := p.AwaitReady("ready ")
	if err == nil || !strings.Contains(err.Error(), `"something else\n"`) || !strings.Contains(err.Error(), "the garbage child did not start") {
		t.Fatalf("AwaitReady: %v", err)
	}
}

// TestStopKills: a child that ignores the signal is killed after the timeout.
func TestStopKills(t *testing.T) {
	p := start(t, "stubborn", Spec{Output: Stderr, Signal: syscall.SIGTERM, Timeout: 300 * time.Millisecond, Detach: true})
	if _, err := p.AwaitReady("ready"); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	err := p.Stop()
	if err == nil || time.Since(t0) < 300*time.Millisecond {
		t.Fatalf("Stop: %v after %v; want a killed child after the timeout", err, time.Since(t0))
	}
	select {
	case <-p.Done():
	default:
		t.Fatal("Done not closed after Stop")
	}
}
