package child

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

// GuardCommand is the hidden mqblast command that runs Guard: `mqblast guard -- PROGRAM
// ARGS...`.
const GuardCommand = "guard"

// GuardArgs are the arguments of mqblast that run argv under Guard.
func GuardArgs(argv []string) []string {
	return append([]string{GuardCommand, "--"}, argv...)
}

// Guard runs argv in this process's process group (it becomes the group's leader when it
// is not), with this process's standard streams, and returns the code to exit with when
// the program ends by itself: the program's, or 128 + the signal that killed it. When ctx
// ends or this process gets SIGTERM, SIGINT or SIGHUP (its parent stopping the program, or
// gone: the parent-death signal, WatchParent), it sends SIGTERM to the whole group (once:
// signal the guard, not its group), waits for the program to end, for at most timeout, and
// then kills what is left of the group with SIGKILL, this process included.
func Guard(ctx context.Context, argv []string, timeout time.Duration) (int, error) {
	if len(argv) == 0 {
		return 0, errors.New("give the program to guard after --")
	}
	pg := os.Getpid()
	if syscall.Getpgrp() != pg {
		if err := syscall.Setpgid(0, 0); err != nil {
			return 0, fmt.Errorf("cannot lead a process group: %w", err)
		}
	}
	// Caught rather than ignored: an ignored signal would stay ignored in the program.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer signal.Stop(sigs)
	c := exec.Command(argv[0], argv[1:]...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := c.Start(); err != nil {
		return 0, fmt.Errorf("cannot start %s: %w", argv[0], err)
	}
	done := make(chan struct{})
	go func() { _ = c.Wait(); close(done) }()
	select {
	case <-done:
		return exitCode(c.ProcessState), nil
	case <-ctx.Done():
	case <-sigs:
	}
	_ = syscall.Kill(-pg, syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(timeout):
	}
	// What the program left in the group (a shell's other children) goes too, and so
	// does this process.
	_ = syscall.Kill(-pg, syscall.SIGKILL)
	<-done
	return exitCode(c.ProcessState), nil
}

// exitCode is a shell's code for how a process ended: its exit status, or 128 + the
// signal that killed it.
func exitCode(st *os.ProcessState) int {
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return st.ExitCode()
}
