package bench

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestMaxRSSOwn: a process started by a big one reports its own peak, not the parent's,
// which an exec after Go's clone(CLONE_VM) would carry into getrusage's ru_maxrss. The
// child is this test binary again.
func TestMaxRSSOwn(t *testing.T) {
	if os.Getenv("MQBLAST_MAXRSS_CHILD") == "1" {
		fmt.Printf("maxrss %d\n", maxRSS())
		return
	}
	big := make([]byte, 256<<20)
	for i := range big {
		if i%4096 == 0 {
			big[i] = 1
		}
	}
	if own := maxRSS(); own < 256<<20 {
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
