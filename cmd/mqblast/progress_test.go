package main

import (
	"bytes"
	"errors"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/creack/pty"

	"github.com/mqblast/mqblast/internal/testbroker"
)

// connRun is a short Connections run: 300 clients at 200/s (about 1.5 s of connecting),
// then 1.5 s held.
func connRun(t *testing.T) *exec.Cmd {
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	host, port, _ := strings.Cut(m.Addr, ":")
	return exec.Command(mqblastBin(t), "conn", "-H", host, "-p", port, "-c", "300", "-R", "200", "--hold", "1500ms",
		"-k", "10", "--procs", "1")
}

// TestProgressNotTerminal: with stderr a pipe, the connect phase is interval lines.
func TestProgressNotTerminal(t *testing.T) {
	t.Parallel()
	c := connRun(t)
	var errOut bytes.Buffer
	c.Stderr = &errOut
	if err := c.Run(); err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	s := errOut.String()
	if strings.Contains(s, "\r") || strings.Contains(s, "connecting [") {
		t.Errorf("a bar on a pipe:\n%q", s)
	}
	if n := strings.Count(s, "established "); n < 3 || !strings.Contains(s, "established 300/300") {
		t.Errorf("want interval lines through the connect phase (%d):\n%s", n, s)
	}
}

// TestProgressTerminal: with stderr a terminal (a pty), the connect phase is one bar drawn
// in place, which ends at 100% on its own line; the interval lines follow.
func TestProgressTerminal(t *testing.T) {
	t.Parallel()
	c := connRun(t)
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	defer ptmx.Close()
	c.Stderr = tty
	c.Env = append(c.Environ(), "TERM=xterm")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	_ = tty.Close()
	var out bytes.Buffer
	done := make(chan struct{})
	go func() {
		_, err := io.Copy(&out, ptmx)
		if err != nil && !errors.Is(err, syscall.EIO) { // EIO: the other side closed
			t.Errorf("reading the pty: %v", err)
		}
		close(done)
	}()
	if err := c.Wait(); err != nil {
		t.Fatalf("%v\n%q", err, out.String())
	}
	<-done
	s := strings.ReplaceAll(out.String(), "\r\n", "\n") // the tty's output processing
	var bar, after []string
	for _, l := range strings.Split(s, "\n") {
		switch {
		case strings.Contains(l, "connecting ["):
			bar = append(bar, l)
		case strings.Contains(l, "established 300/300"):
			after = append(after, l)
		}
	}
	// One bar line (a kernel finding printed while connecting would end it and start another).
	if len(bar) == 0 {
		t.Fatalf("no bar:\n%q", s)
	}
	draws := strings.Split(strings.Join(bar, ""), "\r\x1b[K")
	for _, l := range bar {
		if !strings.HasPrefix(l, "\r\x1b[K") {
			t.Errorf("bar line %q: does not start by clearing the line", l)
		}
	}
	last := draws[len(draws)-1]
	if len(draws) < 3 || !strings.Contains(last, "300/300 100%") || !strings.Contains(last, "done") {
		t.Errorf("bar %q: want it redrawn in place up to 300/300 100%% done", bar)
	}
	if !strings.Contains(draws[1], "ETA") {
		t.Errorf("bar %q: no ETA while connecting", draws[1])
	}
	if len(after) == 0 {
		t.Errorf("no interval lines after the bar:\n%q", s)
	}
}
