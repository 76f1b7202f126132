package bench

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/tier"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/tuning"
)

// TestMaxRSSOwn: a process started by a big one reports its own peak, not the parent's,
// which an exec after Go's clone(CLONE_VM) would carry into getrusage's ru_maxrss. The
// child is this test binary again.
func TestMaxRSSOwn(t *testing.T) {
	if os.Getenv("MQBLAST_MAXRSS_CHILD") == "1" {
		fmt.Printf("maxrss %d\n", tuning.SelfPeakRSS())
		return
	}
	big := make([]byte, 256<<20)
	for i := range big {
		if i%4096 == 0 {
			big[i] = 1
		}
	}
	if own := tuning.SelfPeakRSS(); own < 256<<20 {
		t.Fatalf("this process's peak %d MiB, after touching 256 MiB", own>>20)
	}
	c := exec.Command(os.Args[0], "-test.run", "^TestMaxRSSOwn$")
	c.Env = append(os.Environ(), "MQBLAST_MAXRSS_CHILD=1")
	out, err := c.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	_, v, ok := strings.Cut(string(out), "maxrss ")
	n, perr := strconv.ParseInt(strings.Fields(v + " ")[0], 10, 64)
	if !ok || perr != nil {
		t.Fatalf("child said %q", out)
	}
	if n <= 0 || n > 128<<20 {
		t.Errorf("child's peak RSS %d MiB: not its own (the parent holds 256 MiB)", n>>20)
	}
	big[0] = 2 // keep it live until the child has run
	t.Logf("child's peak RSS %d MiB", n>>20)
}

// TestRunDelay: threads that want more CPU than the host has wait on its run queues, and
// runDelay sees it: 2 x cores threads spinning for 400 ms (locked to their own threads) wait
// about as long as they run; a quiet process waits next to nothing.
func TestRunDelay(t *testing.T) {
	tm := tier.Timing(t)
	d0, ok := tuning.SelfRunDelay()
	if !ok {
		t.Skip("no /proc/self/task/*/schedstat (kernel without CONFIG_SCHED_INFO)")
	}
	time.Sleep(200 * time.Millisecond)
	d1, _ := tuning.SelfRunDelay()
	quiet := d1 - d0
	n := 2 * runtime.NumCPU()
	prev := runtime.GOMAXPROCS(n + 1)
	defer runtime.GOMAXPROCS(prev)
	var wg sync.WaitGroup
	stop := time.Now().Add(400 * time.Millisecond)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			for time.Now().Before(stop) {
			}
		}()
	}
	wg.Wait()
	d2, _ := tuning.SelfRunDelay()
	busy := d2 - d1
	t.Logf("run delay: %v in 200 ms quiet, %v with %d threads spinning 400 ms on %d cores", quiet, busy, n, runtime.NumCPU())
	// n threads on NumCPU cores for 400 ms: (n - cores) x 400 ms wait in total, ideally.
	if want := time.Duration(n-runtime.NumCPU()) * 400 * time.Millisecond / 2; busy < want {
		t.Errorf("run delay %v while oversubscribed, want at least %v", busy, want)
	}
	if quiet > 100*time.Millisecond {
		tm.Errorf("run delay %v in 200 ms of sleep", quiet)
	}
}

// TestLagVerdictNamesRunDelay: the window's figures measured sets (its CPU, its wait for a
// CPU) make the verdict once judged: late while the client waited for a CPU a large share
// of the window is the host's (host.limited, in the same words, not saturated); late
// otherwise is the client's, the host not limited; a client whose CPU was spent is
// saturated whatever it waited.
func TestLagVerdictNamesRunDelay(t *testing.T) {
	ev := "schedule lag p99 14ms > 10ms: the client built messages late while the broker was taking them"
	verdict := func(cpu, wait time.Duration) *result.Result {
		r := &result.Result{Host: result.HostInfo{Cores: 2}}
		r.Client.ScheduleLagUS.P99 = 14_000
		measured(r, result.NewSnapshot(), 2*time.Second, cpu, wait)
		r.Judge()
		return r
	}
	r := verdict(time.Second, 600*time.Millisecond)
	if r.Client.RunDelayS != 0.6 || r.Client.CPUMeasureS != 1 || r.Client.Saturated || r.LimitedBy != "host" {
		t.Errorf("run_delay_s %v, cpu_measure_s %v, saturated %v %q, limited by %q", r.Client.RunDelayS, r.Client.CPUMeasureS,
			r.Client.Saturated, r.Client.SaturationEvidence, r.LimitedBy)
	}
	if got := r.Host.LimitedEvidence; !r.Host.Limited || len(got) != 1 || !strings.HasPrefix(got[0], "schedule lag p99 14ms > 10ms") ||
		!strings.Contains(got[0], "waited 0.60 s for a CPU in the 2.0 s window (30% of one core's time): the host's cores are short") {
		t.Errorf("host.limited %v %q, want it limited by the wait", r.Host.Limited, got)
	}
	for _, wait := range []time.Duration{50 * time.Millisecond, -1} { // 2.5% of the window, or not known
		r := verdict(time.Second, wait)
		if got := r.Client.SaturationEvidence; !r.Client.Saturated || len(got) != 1 || got[0] != ev || r.Host.Limited || r.LimitedBy != "client" {
			t.Errorf("wait %v: saturated %v %q, host.limited %v, limited by %q", wait, r.Client.Saturated, got, r.Host.Limited, r.LimitedBy)
		}
	}
	if r := verdict(-1, -1); r.Client.RunDelayS != 0 {
		t.Errorf("unknown wait: run_delay_s %v", r.Client.RunDelayS)
	}
	r = verdict(3800*time.Millisecond, 600*time.Millisecond)
	if got := r.Client.SaturationEvidence; !r.Client.Saturated || len(got) != 2 || got[0] != "client CPU 95% of 2 cores during the measure window" ||
		got[1] != ev || r.Host.Limited {
		t.Errorf("CPU spent: saturated %v %q, host.limited %v", r.Client.Saturated, got, r.Host.Limited)
	}
}
