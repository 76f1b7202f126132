package sink_test

import (
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/mqblast/mqblast/sink"
)

// TestParseProcsBounds: --procs takes what the connections need and up to four processes
// per core without them; more, or fewer than the connections need, is refused.
func TestParseProcsBounds(t *testing.T) {
	per, cores := sink.PerProcess(), runtime.NumCPU()
	for _, c := range []struct {
		procs string
		conns int
		want  int // 0: refused
	}{
		{"auto", 0, cores},
		{"auto", 3 * per, max(cores, 3)},
		{"1", per, 1},
		{"1", per + 1, 0},
		{"2", per + 1, 2},
		{strconv.Itoa(4 * cores), 0, 4 * cores},
		{strconv.Itoa(4*cores + 1), 0, 0},
		{strconv.Itoa(4*cores + 1), (4*cores + 1) * per, 4*cores + 1}, // the connections need them
		{"0", 0, 0},
		{"1025", 0, 0},
		{"auto", -1, 0},
	} {
		n, err := sink.ParseProcs(c.procs, c.conns)
		if c.want == 0 && err == nil {
			t.Errorf("--procs %s --connections %d: took it (%d processes)", c.procs, c.conns, n)
		}
		if c.want != 0 && (err != nil || n != c.want) {
			t.Errorf("--procs %s --connections %d: %d, %v; want %d", c.procs, c.conns, n, err, c.want)
		}
	}
	for d, ok := range map[string]bool{"0s": true, "200us": true, "1s": true, "1.001s": false, "-1ns": false} {
		v, _ := time.ParseDuration(d)
		if err := sink.CheckFlushDelay("--flush-delay", v); (err == nil) != ok {
			t.Errorf("--flush-delay %s: %v", d, err)
		}
	}
	for n, ok := range map[int]bool{0: true, 1: true, per: true, per + 1: false, -1: false} {
		if err := sink.CheckMaxConnections(n); (err == nil) != ok {
			t.Errorf("--max-connections %d: %v", n, err)
		}
	}
}
