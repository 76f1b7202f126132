package child

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// parentEnv names the variable that tells a child started by StartTied which of its
// descriptors is the read end of the pipe to its parent (WatchParent).
const parentEnv = "MQBLAST_PARENT_FD"

// StartTied starts c tied to this process, so that c does not outlive it, whatever ends it
// (SIGKILL and the OOM killer included):
//   - the kernel sends c's process sig when this process dies (the parent-death signal,
//     set from an OS thread that never exits: the kernel sends it when the thread that
//     started the child ends, and Go ends a thread whose locked goroutine returns);
//   - c inherits the read end of a pipe whose write end only this process holds: it reads
//     EOF when this process has died, which an mqblast child watches (WatchParent), also
//     through `ip netns exec` and other programs that exec it.
//
// sig 0 sends no signal (the pipe alone). c's SysProcAttr, ExtraFiles and Env are kept
// and added to (Env nil: this process's). release closes the write end: call it once c
// has exited, not before (the child would take it for this process's death).
func StartTied(c *exec.Cmd, sig syscall.Signal) (release func(), err error) {
	r, w, err := os.Pipe() // close-on-exec: no other child inherits the write end
	if err != nil {
		return nil, err
	}
	defer r.Close() //nolint:errcheck // the child has its copy
	c.ExtraFiles = append(c.ExtraFiles, r)
	env := c.Env
	if env == nil {
		env = os.Environ()
	}
	c.Env = append(withoutVar(env, parentEnv), parentEnv+"="+strconv.Itoa(2+len(c.ExtraFiles)))
	if c.SysProcAttr == nil {
		c.SysProcAttr = &syscall.SysProcAttr{}
	}
	c.SysProcAttr.Pdeathsig = sig
	onForker(func() { err = c.Start() })
	if err != nil {
		_ = w.Close()
		return nil, err
	}
	return func() { _ = w.Close() }, nil
}

// withoutVar is env without the variable name.
func withoutVar(env []string, name string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k != name {
			out = append(out, kv)
		}
	}
	return out
}

// forker runs the starts of tied children on one OS thread that never exits, the parent
// of their parent-death signal.
var forker struct {
	once sync.Once
	jobs chan func()
}

func onForker(f func()) {
	forker.once.Do(func() {
		forker.jobs = make(chan func())
		go func() {
			runtime.LockOSThread() // never unlocked: this thread lives as long as the process
			for job := range forker.jobs {
				job()
			}
		}()
	})
	done := make(chan struct{})
	forker.jobs <- func() { f(); close(done) }
	<-done
}

// WatchParent returns a channel that is closed when the process that started this one with
// StartTied has died, or nil when this process was not started so. It removes the
// variable from this process's environment, so that a child of this one does not take
// this process's pipe for its own. Call it once, early.
func WatchParent() <-chan struct{} {
	v, ok := os.LookupEnv(parentEnv)
	if !ok {
		return nil
	}
	_ = os.Unsetenv(parentEnv)
	fd, err := strconv.Atoi(v)
	var st syscall.Stat_t
	if err != nil || fd < 3 || syscall.Fstat(fd, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFIFO {
		return nil // not a pipe a parent gave us: nothing to watch
	}
	syscall.CloseOnExec(fd)
	f := os.NewFile(uintptr(fd), "the pipe to the parent")
	gone := make(chan struct{})
	go func() {
		var b [64]byte
		for {
			if _, err := f.Read(b[:]); err != nil { // EOF: the parent's end is closed
				close(gone)
				return
			}
		}
	}()
	return gone
}
