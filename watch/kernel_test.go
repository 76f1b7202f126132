package watch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mqblast/mqblast/result"
)

// writeProcNet writes the netstat, snmp and sockstat of a fake /proc/PID with the given
// retransmission counters.
func writeProcNet(t *testing.T, root string, out, retrans, probes, dsack string) {
	t.Helper()
	for name, body := range map[string]string{
		"netstat":  "TcpExt: TCPLossProbes TCPDSACKRecv TCPTimeouts\nTcpExt: " + probes + " " + dsack + " 0\n",
		"snmp":     "Tcp: OutSegs RetransSegs\nTcp: " + out + " " + retrans + "\n",
		"sockstat": "TCP: inuse 1 orphan 0 tw 0 alloc 1 mem 1\n",
	} {
		p := filepath.Join(root, "net", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWatchLateACKsQuoteClientWait: tail-loss probes answered by DSACKs are a late-ACK
// finding, printed once while the run goes, and the result's finding quotes the client's
// own wait for a CPU over the measure window (client.run_delay_s), which an interval has not.
func TestWatchLateACKsQuoteClientWait(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "proc", "4242")
	writeProcNet(t, root, "1000", "10", "5", "5")
	w := &Watch{procSys: filepath.Join(root, "no-sys"), clientRoot: root, seen: map[string]bool{}}
	w.Start()
	writeProcNet(t, root, "2000", "110", "105", "103")
	var progress strings.Builder
	iv := result.Interval{TS: 1}
	w.Interval(&iv, &progress)
	const late = "TCPLossProbes +100 on the client host: tail-loss probes were answered by 98 DSACKs (TCPDSACKRecv): " +
		"the data had arrived and the ACKs came late, because a receiver was waiting for a CPU; nothing was lost " +
		"(100 segments retransmitted, 10.0% of the 1,000 new segments sent)"
	const fix = " — give the receiving processes CPU: the client and the broker on cores (or hosts) of their own, fewer connections per core, or a lower rate; the network is not at fault"
	if want := "   1.0s  kernel: " + late + fix + "\n"; progress.String() != want {
		t.Errorf("progress:\n got %q\nwant %q", progress.String(), want)
	}
	res := &result.Result{}
	res.Client.RunDelayS, res.Throughput.WindowS = 12.5, 50
	w.Finish(res)
	if res.Kernel == nil || len(res.Kernel.Findings) != 1 {
		t.Fatalf("kernel %+v: want one finding", res.Kernel)
	}
	want := late + "; the client's threads waited 12.50 s for a CPU in 50.0 s (25% of one core's time): it was short of CPU itself" + fix
	if got := res.Kernel.Findings[0].String(); got != want {
		t.Errorf("finding:\n got %s\nwant %s", got, want)
	}
	res.Judge()
	if !res.Host.Limited || len(res.Host.LimitedEvidence) != 1 || res.Host.LimitedEvidence[0] != want {
		t.Errorf("host.limited %v, evidence %q", res.Host.Limited, res.Host.LimitedEvidence)
	}
}
