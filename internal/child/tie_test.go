package child

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helper is the test binary as the child of mode (TestHelperChild), with its stdout.
func helper(t *testing.T, mode string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	c := exec.Command(os.Args[0], "-test.run=^TestHelperChild$")
	c.Env = append(os.Environ(), helperEnv+"="+mode)
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	return c, bufio.NewReader(out)
}

func readLine(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("the child's line: %q, %v", line, err)
	}
	return strings.TrimSpace(line)
}

// TestWatchParent: a tied child sees its pipe's EOF once the parent's end closes (as it
// does when the parent dies), and not before; an untied one has nothing to watch.
func TestWatchParent(t *testing.T) {
	c, out := helper(t, "watch")
	release, err := StartTied(c, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	if line := readLine(t, out); line != "ready true" {
		t.Fatalf("tied child: %q, want ready true", line)
	}
	got := make(chan string, 1)
	go func() { line, _ := out.ReadString('\n'); got <- strings.TrimSpace(line) }()
	select {
	case line := <-got:
		t.Fatalf("the child said %q while its parent lives", line)
	case <-time.After(300 * time.Millisecond):
	}
	release()
	select {
	case line := <-got:
		if line != "gone" {
			t.Fatalf("after release: %q, want gone", line)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the child did not see its parent's end close")
	}

	u, uout := helper(t, "watch")
	if err := u.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = u.Wait() })
	if line := readLine(t, uout); line != "ready false" {
		t.Errorf("untied child: %q, want ready false", line)
	}
}

// TestTiedSurvivesStarterThread: the parent-death signal is not sent when the OS thread
// that asked for the start ends (Go ends the thread of a goroutine that returns locked to
// it), only when the process dies.
func TestTiedSurvivesStarterThread(t *testing.T) {
	c, out := helper(t, "sleep")
	var err error
	for tries := 0; ; tries++ {
		if tries == 100 {
			t.Skip("no goroutine ran off the main thread, which Go never ends")
		}
		res := make(chan bool, 1)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
			if syscall.Gettid() == syscall.Getpid() {
				runtime.UnlockOSThread()
				res <- false
				return
			}
			_, err = StartTied(c, syscall.SIGKILL)
			res <- true
		}()
		if <-res {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	if line, err := out.ReadString('\n'); line != "ready\n" {
		t.Fatalf("the child: %q, %v (killed with the thread that started it?)", line, err)
	}
	time.Sleep(500 * time.Millisecond)
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(c.Process.Pid) + "/stat")
	if f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:])); len(f) == 0 || f[0] == "Z" {
		t.Fatalf("the child died with the thread that started it: %s", b)
	}
}

// guarded runs script under Guard in a child process and returns it, once it is ready.
func guarded(t *testing.T, script string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	c, out := helper(t, "guard")
	c.Env = append(c.Env, "GUARD_SCRIPT="+script)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	if line := readLine(t, out); line != "ready" {
		t.Fatalf("guard child: %q", line)
	}
	return c, out
}

// TestGuard: the guard reports how a program that ends by itself ended, and on SIGTERM
// ends the program's whole process group: a shell and the child it left in the background.
func TestGuard(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	for script, want := range map[string]string{"exit 3": "3 <nil>", "kill -9 $$": "137 <nil>"} {
		_, out := guarded(t, script)
		if line := readLine(t, out); line != want {
			t.Errorf("%s: %q, want %q", script, line, want)
		}
	}
	if _, err := Guard(context.Background(), nil, time.Second); err == nil {
		t.Error("no program: no error")
	}

	pidFile := filepath.Join(t.TempDir(), "pid")
	c, _ := guarded(t, "sleep 60 & echo $! > "+pidFile+"; wait")
	var sleeper int
	for deadline := time.Now().Add(5 * time.Second); sleeper == 0; time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(pidFile)
		sleeper, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		if time.Now().After(deadline) {
			t.Fatal("the guarded shell did not start its child")
		}
	}
	t.Cleanup(func() { _ = syscall.Kill(sleeper, syscall.SIGKILL) })
	_ = c.Process.Signal(syscall.SIGTERM)
	_ = c.Wait()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(sleeper) + "/stat")
		if err != nil || strings.Contains(string(b), ") Z ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the shell's child outlived the guard's SIGTERM")
		}
	}
}
