package result

import (
	"strings"
	"testing"
)

// TestJudgeTable: each row of the decision table (docs/design.md, "Who limited a run"),
// its evidence forced: who limited the window, and which headlines stand. SATURATED never
// stands beside BROKER STALLED or BROKER BUSY, and HOST LIMITED stands exactly when there
// is host evidence to show.
func TestJudgeTable(t *testing.T) {
	t.Parallel()
	const (
		late   = "schedule lag p99 33ms > 10ms"
		cpu    = "client CPU 95% of 2 cores during the measure window"
		waited = "its threads waited 3.65 s for a CPU in the 7.0 s window (52% of one core's time)"
		kernel = "ListenOverflows +3 on the broker host: its accept queue was full — raise it"
	)
	stalled := []string{"back_pressure: 10 publishers held 40 times for 2s in all (the socket did not take the bytes: the broker did not read)"}
	busy := []string{"broker process CPU 99% of a core over the measure window (pid 7, /proc)"}
	dropped := []string{"the broker dropped 4 messages by its own policy"}
	for _, c := range []struct {
		name string
		e    Evidence
		// want: limited by, then the headlines standing: S saturated, T stalled, B busy, H host limited
		by, heads string
		reason    string // a word of the reason
	}{
		{"nothing", Evidence{}, "", "", ""},
		{"dropped wins over the client's CPU", Evidence{Dropped: dropped, CPUBound: cpu, Late: late}, "broker", "", "dropped"},
		{"busy", Evidence{Busy: busy}, "broker", "B", "CPU"},
		{"busy wins over the client's CPU", Evidence{Busy: busy, CPUBound: cpu}, "broker", "B", "CPU"},
		// The overload run: Mosquitto at 100 % not reading, the client late on the cores it shares.
		{"overload on a shared host", Evidence{Busy: busy, Stalled: stalled, Late: late, Waited: waited, SharedHost: true}, "broker", "TBH", "CPU"},
		{"busy and late on a shared host without a wait", Evidence{Busy: busy, Late: late, SharedHost: true}, "broker", "BH", "CPU"},
		{"busy and late apart, the lateness the client's own", Evidence{Busy: busy, Late: late}, "broker", "B", "CPU"},
		{"client's CPU spent", Evidence{CPUBound: cpu}, "client", "S", "spent"},
		{"client's CPU spent overrules the holds", Evidence{CPUBound: cpu, Stalled: stalled, Late: late, Waited: waited, SharedHost: true}, "client", "S", "spent"},
		{"stalled on a shared host, the client waiting", Evidence{Stalled: stalled, Waited: waited, SharedHost: true}, "host", "TH", "share"},
		{"stalled and late on a shared host, the client waiting", Evidence{Stalled: stalled, Late: late, Waited: waited, SharedHost: true}, "host", "TH", "share"},
		{"stalled", Evidence{Stalled: stalled}, "broker", "T", "held"},
		{"stalled and late on a shared host", Evidence{Stalled: stalled, Late: late, SharedHost: true}, "broker", "TH", "held"},
		{"stalled and late apart", Evidence{Stalled: stalled, Late: late}, "broker", "T", "held"},
		{"stalled, the client waiting apart", Evidence{Stalled: stalled, Late: late, Waited: waited}, "broker", "TH", "held"},
		{"late while waiting", Evidence{Late: late, Waited: waited}, "host", "H", "waited"},
		{"late while waiting on a shared host", Evidence{Late: late, Waited: waited, SharedHost: true}, "host", "H", "waited"},
		{"late", Evidence{Late: late}, "client", "S", "own work"},
		{"late on a shared host, the broker idle", Evidence{Late: late, SharedHost: true}, "client", "S", "own work"},
		{"waited, on time", Evidence{Waited: waited}, "", "", ""},
		{"kernel", Evidence{Kernel: []string{kernel}}, "host", "H", "kernel"},
		{"kernel beside the broker's holds", Evidence{Kernel: []string{kernel}, Stalled: stalled}, "broker", "TH", "held"},
		{"failed with nothing seen", Evidence{Failed: true}, "broker", "", "kept its schedule"},
		{"calibration stalled", Evidence{Stalled: stalled, Calibration: true, SharedHost: true}, "host", "TH", "calibration"},
		{"calibration late", Evidence{Late: late, Calibration: true, SharedHost: true}, "client", "S", "own work"},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := Judge(c.e)
			heads := ""
			for _, h := range []struct {
				on bool
				c  string
			}{{v.Saturated, "S"}, {v.Stalled, "T"}, {v.Busy, "B"}, {v.HostLimited, "H"}} {
				if h.on {
					heads += h.c
				}
			}
			if v.LimitedBy != c.by || heads != c.heads || !strings.Contains(v.Reason, c.reason) {
				t.Errorf("limited by %q (%s), headlines %q; want %q (…%s…), %q", v.LimitedBy, v.Reason, heads, c.by, c.reason, c.heads)
			}
			if v.Saturated && (v.Stalled || v.Busy) {
				t.Errorf("SATURATED beside BROKER STALLED or BUSY: %+v", v)
			}
			if v.Saturated != (v.LimitedBy == "client") || v.HostLimited != (len(v.HostEvidence) > 0) ||
				v.LimitedBy == "host" && !v.HostLimited || v.LimitedBy != "" && len(v.Evidence) == 0 && !c.e.Failed {
				t.Errorf("verdicts disagree with one another: %+v", v)
			}
			if v.Saturated && len(v.SaturationEvidence) == 0 {
				t.Errorf("saturated without evidence: %+v", v)
			}
		})
	}
}

// TestJudgeSharedHostWords: the overload run's verdicts in words: the client's lateness is
// the host's, never "the client, not the broker", and HOST LIMITED says what its evidence
// is when the kernel found nothing, and points to the kernel lines when it did.
func TestJudgeSharedHostWords(t *testing.T) {
	t.Parallel()
	e := Evidence{Busy: []string{"broker process CPU 99% of a core"}, Stalled: []string{"back_pressure: held"},
		Late: "schedule lag p99 33ms > 10ms", SharedHost: true}
	v := Judge(e)
	want := "the host (its kernel, its cores or its hypervisor), not the broker alone, shaped these figures: schedule lag p99 33ms > 10ms: " +
		"the client built messages late on the host it shares with the broker, which was at its CPU's limit: the host's lateness, not the client's"
	if got := v.HostLine(); got != want {
		t.Errorf("host line\n got %s\nwant %s", got, want)
	}
	e.Kernel = []string{"ListenOverflows +3 on the broker host: its accept queue was full — raise it"}
	v = Judge(e)
	if got := v.HostLine(); !strings.HasPrefix(got, want) || !strings.HasSuffix(got, " (see the kernel lines)") || strings.Contains(got, "ListenOverflows") {
		t.Errorf("host line with a kernel finding: %s", got)
	}
	v = Judge(Evidence{Kernel: e.Kernel})
	if got := v.HostLine(); got != "the host (its kernel, its cores or its hypervisor), not the broker alone, shaped these figures (see the kernel lines)" {
		t.Errorf("host line of a kernel finding alone: %s", got)
	}
}

// TestResultJudge: a document's evidence is read from its figures, not its verdicts, so a
// judged document judged again keeps its verdicts; the overload run's figures (Mosquitto
// local at 99 % of a core, 2 s held by back pressure, the client 33 ms late having waited
// 52 % of a core's time) are the broker's limit, the client's lateness the host's.
func TestResultJudge(t *testing.T) {
	t.Parallel()
	r := &Result{Host: HostInfo{Cores: 2}, Throughput: Throughput{WindowS: 7}}
	r.Client.ScheduleLagUS.P99, r.Client.CPUMeasureS, r.Client.RunDelayS = 32_767, 3.2, 3.65
	r.BrokerStalled = BrokerStalled{HeldS: map[string]float64{"back_pressure": 2}, Evidence: []string{"back_pressure: held for 2s"}}
	r.BrokerProcess = &BrokerProcess{Source: "/proc", PID: 7}
	r.BrokerBusy = &BrokerBusy{Busy: true, Evidence: []string{"broker process CPU 99% of a core over the measure window (pid 7, /proc)"}}
	r.Client.Saturated, r.Client.SaturationEvidence = true, []string{"as the old code said"} // not evidence: overwritten
	r.Judge()
	first := r.Verdicts()
	if first.Saturated || !first.Stalled || !first.Busy || !first.HostLimited || r.LimitedBy != "broker" ||
		!strings.Contains(strings.Join(r.Host.LimitedEvidence, ""), "the host's cores are short") {
		t.Errorf("verdicts %+v, limited by %q", first, r.LimitedBy)
	}
	r.Judge()
	if again := r.Verdicts(); again.LimitedBy != first.LimitedBy || again.Stalled != first.Stalled || again.Saturated != first.Saturated ||
		strings.Join(again.HostEvidence, "|") != strings.Join(first.HostEvidence, "|") {
		t.Errorf("judged again: %+v, first %+v", again, first)
	}
	// The broker held less than stallMin and left nothing unsent: not stalled, whatever
	// the field said.
	r.BrokerStalled.HeldS["back_pressure"] = 0.099999
	r.BrokerBusy = nil
	r.Client.RunDelayS = 0
	r.Judge()
	if v := r.Verdicts(); v.Stalled || !v.Saturated || r.LimitedBy != "client" || v.HostLimited {
		t.Errorf("held 99.999 ms: %+v, limited by %q", v, r.LimitedBy)
	}
}
