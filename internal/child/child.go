package child

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Stream names one of a child's output streams.
type Stream int

const (
	// Stdout is the child's standard output.
	Stdout Stream = iota
	// Stderr is the child's standard error.
	Stderr
)

// Spec says how to start a child.
type Spec struct {
	// Name names the child in errors ("the embedded broker", "worker 3").
	Name string
	// Exe is the mqblast binary the child runs ("": this process's own).
	Exe string
	// Args are the arguments to this program.
	Args []string
	// Env is the child's environment; nil: this process's.
	Env []string
	// Output is the stream the caller reads through Process.Output.
	Output Stream
	// Log takes the other stream; nil discards it.
	Log io.Writer
	// Stdin gives the child a pipe for standard input (Process.Stdin); otherwise it has none.
	Stdin bool
	// Files are open files the child inherits: the first as its descriptor 3 (/dev/fd/3),
	// and so on. The caller keeps and closes its own.
	Files []*os.File
	// Signal is what Stop sends (default os.Interrupt).
	Signal os.Signal
	// Timeout is how long Stop waits for the child to end before killing it (default 10 s).
	Timeout time.Duration
	// Detach puts the child in a process group of its own, so that a Ctrl-C at the terminal
	// does not reach it (the caller stops it).
	Detach bool
}

// Exe returns exe, or this process's own binary when exe is "".
func Exe(exe string) (string, error) {
	if exe != "" {
		return exe, nil
	}
	return os.Executable()
}

// Process is a running child.
type Process struct {
	name    string
	cmd     *exec.Cmd
	signal  os.Signal
	timeout time.Duration
	out     *os.File
	release func() // the pipe that ties the child to this process (StartTied)
	// Output is the stream Spec.Output names, buffered. It stays readable after the child
	// has exited, to the end of what it wrote.
	Output *bufio.Reader
	// Stdin is the write end of the child's standard input with Spec.Stdin, else nil.
	Stdin io.WriteCloser

	done chan struct{}
	err  error
}

// Start starts this program (or s.Exe) with s.Args.
func Start(s Spec) (*Process, error) {
	exe, err := Exe(s.Exe)
	if err != nil {
		return nil, fmt.Errorf("cannot find the mqblast binary to start %s: %w", s.Name, err)
	}
	c := exec.Command(exe, s.Args...)
	c.Env = s.Env
	c.ExtraFiles = s.Files
	// os.Pipe rather than StdoutPipe: exec's Wait closes its pipes, and what the child wrote
	// last would be lost to a reader still at it.
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	log := s.Log
	if log == nil {
		log = io.Discard
	}
	if s.Output == Stderr {
		c.Stdout, c.Stderr = log, w
	} else {
		c.Stdout, c.Stderr = w, log
	}
	var in *os.File
	if s.Stdin {
		var ir *os.File
		if ir, in, err = os.Pipe(); err != nil {
			_ = r.Close()
			_ = w.Close()
			return nil, err
		}
		c.Stdin = ir
		defer ir.Close() //nolint:errcheck // the child has its copy
	}
	p := &Process{name: s.Name, cmd: c, signal: s.Signal, timeout: s.Timeout, out: r, Output: bufio.NewReader(r),
		done: make(chan struct{})}
	if p.signal == nil {
		p.signal = os.Interrupt
	}
	if p.timeout <= 0 {
		p.timeout = 10 * time.Second
	}
	if s.Detach {
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	// Tied: the child gets Signal and its pipe's EOF when this process dies.
	sig, _ := p.signal.(syscall.Signal)
	p.release, err = StartTied(c, sig)
	_ = w.Close() // the child has its copy: EOF when it ends
	if err != nil {
		_ = r.Close()
		if in != nil {
			_ = in.Close()
		}
		return nil, fmt.Errorf("cannot start %s: %w", s.Name, err)
	}
	if in != nil {
		p.Stdin = in
	}
	go func() { p.err = c.Wait(); p.release(); close(p.done) }()
	return p, nil
}

// Pid is the child's process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// AwaitReady reads the child's first line from Output and returns what follows prefix on
// it; the error quotes what the child printed when the line does not start with prefix.
func (p *Process) AwaitReady(prefix string) (string, error) {
	line, err := p.Output.ReadString('\n')
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), prefix)
	if err == nil && ok {
		return rest, nil
	}
	if err == nil {
		err = fmt.Errorf("no %q line", strings.TrimSpace(prefix))
	}
	return "", fmt.Errorf("%s did not start (it printed %q): %w", p.name, line, err)
}

// Signal sends sig to the child.
func (p *Process) Signal(sig os.Signal) { _ = p.cmd.Process.Signal(sig) }

// Done is closed when the child has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Wait waits for the child to exit and returns its exit error (an *exec.ExitError for a
// status other than 0).
func (p *Process) Wait() error {
	<-p.done
	return p.err
}

// Stop sends the child Spec.Signal and waits for it to exit; after Spec.Timeout it kills
// it. It returns the child's exit error.
func (p *Process) Stop() error {
	select {
	case <-p.done:
		return p.err
	default:
	}
	p.Signal(p.signal)
	select {
	case <-p.done:
	case <-time.After(p.timeout):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	return p.err
}

// Close stops the child and releases its pipes; Output reads nothing after it.
func (p *Process) Close() {
	_ = p.Stop()
	if p.Stdin != nil {
		_ = p.Stdin.Close()
	}
	_ = p.out.Close()
}
