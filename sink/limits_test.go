package sink_test

import (
	"net"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/mqblast/mqblast/codec"
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
		{"auto", 3 * per, max(cores, 4)}, // 3.16 processes at AutoFill
		{"auto", 3 * int(float64(per)*sink.AutoFill), max(cores, 3)},
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

// TestFullProcessRefusesAndKeepsItsConnections: a sink process at its descriptor limit
// refuses the connections beyond what it holds (the limit less 64) and keeps those it has; an
// accept that failed for want of a descriptor would end its event loop and every connection.
func TestFullProcessRefusesAndKeepsItsConnections(t *testing.T) {
	const nofile, extra = 1200, 150 // PerProcess takes a limit above 1064
	p := startChild(t, 0, envChildNoFile+"="+strconv.Itoa(nofile))
	first, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close() //nolint:errcheck
	c := &raw{t: t, nc: first, v: codec.V311}
	c.send(codec.AppendConnect(nil, &codec.Connect{ClientID: []byte("first"), CleanStart: true, KeepAlive: 60}, codec.V311))
	if h, _ := c.next(); h.Type != codec.TypeConnack {
		t.Fatalf("got %v, want CONNACK", h.Type)
	}
	var conns []net.Conn
	defer func() {
		for _, nc := range conns {
			_ = nc.Close()
		}
	}()
	for i := range nofile + extra {
		nc, err := net.Dial("tcp", p.addr)
		if err != nil {
			t.Fatalf("connection %d: %v (sink: %+v)", i, err, p.stats(t).Stats)
		}
		conns = append(conns, nc)
	}
	most := int64(nofile - 64)
	deadline := time.Now().Add(10 * time.Second)
	var st childStats
	for {
		st = p.stats(t)
		if st.ConnectionsTotal >= uint64(nofile+extra+1) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if st.Connections != most || st.Refused < uint64(nofile+extra+1-int(most)) {
		t.Errorf("%d open, %d accepted, %d refused; want %d open and the other %d refused",
			st.Connections, st.ConnectionsTotal, st.Refused, most, nofile+extra+1-int(most))
	}
	c.ping() // the first connection still answers: its event loop runs
}
