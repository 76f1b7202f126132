package result

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// The limits of the client's evidence.
const (
	// SaturationLag is the schedule lag (p99) past which the client built messages late.
	SaturationLag = 10 * time.Millisecond
	// RunDelayShare is the share of a window (of one core's time) that the client's threads
	// may wait for a CPU before its lateness is said to be the host's.
	RunDelayShare = 0.05
	// ClientCPUShare is the share of its host's cores past which the client's CPU was spent.
	ClientCPUShare = 0.9
	// BusyShare is the share of the broker's CPU (its host's CPUs, or one core of its
	// process) over a window from which the broker's CPU was the limit.
	BusyShare = 0.95
)

// Evidence is what a run, or a window of one (a stage, a limit search's step), saw of the
// client, the broker and the host: each item is the figure in words, empty (or false) when
// it was not seen. Judge draws every verdict from it at once.
type Evidence struct {
	// Late: the client built messages late (schedule lag p99 over SaturationLag), lag it
	// caused itself (the time the broker held a publisher is not in it).
	Late string
	// CPUBound: the client's CPU was at ClientCPUShare of its cores or more.
	CPUBound string
	// Waited: the client's threads waited for a CPU for RunDelayShare of the window or more.
	Waited string
	// Stalled: the broker held the publishers back (flow control, a socket it did not
	// read, no connection) or left scheduled messages unsent.
	Stalled []string
	// Busy: the broker's CPU was at its limit (one core of its process, its host's CPUs).
	Busy []string
	// Dropped: the broker said it dropped messages by its own policy, and copies were lost.
	Dropped []string
	// SharedHost: the broker runs on the client's host and shares its cores (a local
	// process, the sink of a calibration run).
	SharedHost bool
	// Calibration: the run measured the client host's ceiling against mqblast sink.
	Calibration bool
	// Kernel are the kernel's findings on the client's or the broker's host.
	Kernel []string
	// Failed: the window failed its SLO, so something limited it (a limit search's step).
	Failed bool
}

// Verdicts are a run's headline verdicts, one judgement: who limited it and what the
// headlines say. Saturated never stands beside Stalled or Busy.
type Verdicts struct {
	// LimitedBy is "client", "broker", "host", or empty when nothing limited the window;
	// Reason says why (the row of the decision table), Evidence the figures behind it.
	LimitedBy string
	Reason    string
	Evidence  []string
	// Saturated: the client, not the broker, limited the window (SATURATED).
	Saturated          bool
	SaturationEvidence []string
	// Stalled: the broker held the publishers back (BROKER STALLED); Busy: its CPU was the
	// limit (BROKER BUSY).
	Stalled, Busy bool
	// HostLimited: the host shaped the figures (HOST LIMITED), with its evidence; Kernel
	// are those of it that are kernel findings (the summary's kernel lines).
	HostLimited  bool
	HostEvidence []string
	Kernel       []string
}

// LowerBound reports whether the window's figures are a lower bound for the broker: the
// client or the host, not the broker, limited it.
func (v *Verdicts) LowerBound() bool { return v.LimitedBy == "client" || v.LimitedBy == "host" }

// Judge returns the verdicts the evidence gives, by the decision table of docs/design.md
// ("Who limited a run"): the first row that holds names who limited the window.
//
//  1. the broker dropped messages by its own policy: the broker;
//  2. the broker's CPU was at its limit: the broker;
//  3. the client's CPU was spent: the client (the broker's holds may be its own doing: it
//     read acknowledgements and sockets late);
//  4. the broker held the publishers back while it shared the client's host and the
//     client waited for a CPU: the host;
//  5. the broker held the publishers back: the broker;
//  6. the client was late while it waited for a CPU: the host;
//  7. the client was late: the client;
//  8. the kernel found the host short: the host;
//  9. the window failed its SLO with none of these: the broker.
//
// A calibration run's broker is mqblast sink on the client's host, so a verdict of the
// broker there is the host's. The client's lateness is the host's, never the client's,
// when it waited for a CPU, or when the broker shares its host and held it back or was
// busy (rows 2, 4, 5): HOST LIMITED says so beside the broker's verdict.
func Judge(e Evidence) Verdicts {
	v := Verdicts{Stalled: len(e.Stalled) > 0, Busy: len(e.Busy) > 0, Kernel: e.Kernel}
	late, waited := e.Late != "", e.Waited != ""
	broker := slices.Concat(e.Dropped, e.Busy, e.Stalled)
	var client []string
	if e.CPUBound != "" {
		client = append(client, e.CPUBound)
	}
	if late {
		client = append(client, e.Late+": the client built messages late while the broker was taking them")
	}
	hostLate := late && (waited || e.SharedHost && (v.Busy || v.Stalled))
	switch {
	case len(e.Dropped) > 0:
		v.LimitedBy, v.Reason = "broker", "the broker dropped messages by its own policy"
	case v.Busy:
		v.LimitedBy, v.Reason = "broker", "the broker's CPU was at its limit"
	case e.CPUBound != "":
		v.LimitedBy, v.Reason = "client", "the client's CPU was spent (the broker's holds, if any, may be its own doing: it read late)"
		v.Stalled, hostLate = false, false
	case v.Stalled && waited && e.SharedHost:
		v.LimitedBy, v.Reason = "host", "the broker held the publishers back while it and the client waited for the cores of the host they share"
	case v.Stalled:
		v.LimitedBy, v.Reason = "broker", "the broker held the publishers back"
	case late && waited:
		v.LimitedBy, v.Reason = "host", "the client was late while its threads waited for a CPU"
	case late:
		v.LimitedBy, v.Reason = "client", "the client was late by its own work while the broker was taking its messages"
	case len(e.Kernel) > 0:
		v.LimitedBy, v.Reason = "host", "the kernel found the host short"
	case e.Failed:
		v.LimitedBy, v.Reason = "broker", "the window failed its SLO while the client kept its schedule and the host showed nothing"
	}
	switch {
	case hostLate && waited:
		v.HostEvidence = append(v.HostEvidence, e.Late+": the client built messages late and "+e.Waited+
			": the host's cores are short (the broker or other work shares them)")
	case hostLate:
		what := "held the publishers back"
		if v.Busy {
			what = "was at its CPU's limit"
		}
		v.HostEvidence = append(v.HostEvidence, e.Late+": the client built messages late on the host it shares with the broker, which "+
			what+": the host's lateness, not the client's")
	case v.LimitedBy == "host" && v.Stalled && waited:
		v.HostEvidence = append(v.HostEvidence, e.Waited+": the host's cores are short (the broker shares them)")
	}
	if e.Calibration && v.LimitedBy == "broker" {
		v.LimitedBy, v.Reason = "host", "a calibration run: mqblast sink on this host relays what the client sends, so the host's ceiling is the limit"
		v.HostEvidence = append(v.HostEvidence, v.Reason)
	}
	v.HostEvidence = append(v.HostEvidence, e.Kernel...)
	v.HostLimited = len(v.HostEvidence) > 0
	switch v.LimitedBy {
	case "client":
		v.Saturated, v.SaturationEvidence = true, client
		v.Evidence = slices.Concat(client, broker)
	case "broker":
		v.Evidence = slices.Concat(broker, v.HostEvidence)
		if !hostLate {
			v.Evidence = append(v.Evidence, client...)
		}
	case "host":
		v.Evidence = slices.Concat(v.HostEvidence, broker)
	}
	return v
}

// Evidence returns the evidence r's figures hold: the client's schedule lag, CPU and wait
// for a CPU over the measure window, the broker's holds (broker_stalled's figures and the
// unsent messages), broker_busy's evidence, the kernel's findings, and whether the broker
// shares the client's host. It reads no verdict, so judging a judged document again gives
// the same verdicts.
func (r *Result) Evidence() Evidence {
	var e Evidence
	c := &r.Client
	if lag := time.Duration(c.ScheduleLagUS.P99) * time.Microsecond; lag > SaturationLag {
		e.Late = fmt.Sprintf("schedule lag p99 %v > %v", lag, SaturationLag)
	}
	if w := r.Throughput.WindowS; w > 0 {
		if util := c.CPUMeasureS / w / float64(max(r.Host.Cores, 1)); util > ClientCPUShare {
			e.CPUBound = fmt.Sprintf("client CPU %.0f%% of %d cores during the measure window", 100*util, r.Host.Cores)
		}
		if share := c.RunDelayS / w; share >= RunDelayShare {
			e.Waited = fmt.Sprintf("its threads waited %.2f s for a CPU in the %.1f s window (%.0f%% of one core's time)", c.RunDelayS, w, 100*share)
		}
	}
	if r.brokerHeld() {
		e.Stalled = r.BrokerStalled.Evidence
		if len(e.Stalled) == 0 {
			e.Stalled = []string{"the broker held the publishers back"}
		}
	}
	if b := r.BrokerBusy; b != nil && len(b.Evidence) > 0 {
		e.Busy = b.Evidence
	}
	if k := r.Kernel; k != nil {
		for _, f := range k.Findings {
			e.Kernel = append(e.Kernel, f.String())
		}
	}
	e.SharedHost = r.Calibration || r.BrokerProcess != nil && r.BrokerProcess.PID > 0
	e.Calibration = r.Calibration
	return e
}

// brokerHeld reports whether r's figures show the broker holding the publishers back:
// stallMin of publisher time held, messages unsent for a cause of the broker's, or
// messages in flight at the end.
func (r *Result) brokerHeld() bool {
	var heldUS float64
	for _, s := range r.BrokerStalled.HeldS {
		heldUS += math.Round(s * 1e6)
	}
	u := r.Messages.Unsent
	return time.Duration(heldUS)*time.Microsecond >= stallMin ||
		u["disconnected"]+u["flow_control"]+u["back_pressure"]+u["not_read"] > 0 || r.Messages.InFlightAtEnd > 0
}

// Judge sets r's verdicts from its evidence (Judge): client.saturated and its evidence,
// broker_stalled.stalled, host.limited and its evidence, limited_by and its reason. Call
// it once every figure is in (after the watch's).
func (r *Result) Judge() { r.SetVerdicts(Judge(r.Evidence())) }

// SetVerdicts writes v into r's verdict fields.
func (r *Result) SetVerdicts(v Verdicts) {
	r.Client.Saturated, r.Client.SaturationEvidence = v.Saturated, v.SaturationEvidence
	r.BrokerStalled.Stalled = v.Stalled
	r.Host.Limited, r.Host.LimitedEvidence = v.HostLimited, v.HostEvidence
	r.LimitedBy, r.LimitedByReason = v.LimitedBy, v.Reason
}

// Verdicts returns the verdicts r holds, as Judge set them: what the summary and the
// report print, so that they say what the document says.
func (r *Result) Verdicts() Verdicts {
	v := Verdicts{LimitedBy: r.LimitedBy, Reason: r.LimitedByReason,
		Saturated: r.Client.Saturated, SaturationEvidence: r.Client.SaturationEvidence,
		Stalled: r.BrokerStalled.Stalled, Busy: r.BrokerBusy != nil && r.BrokerBusy.Busy,
		HostLimited: r.Host.Limited, HostEvidence: r.Host.LimitedEvidence,
		Kernel: r.Evidence().Kernel}
	return v
}

// HostLine is HOST LIMITED's text: the evidence itself, with the kernel's findings left
// to the kernel lines, which the summary prints apart.
func (v *Verdicts) HostLine() string {
	line := "the host (its kernel, its cores or its hypervisor), not the broker alone, shaped these figures"
	var own []string
	for _, ev := range v.HostEvidence {
		if !slices.Contains(v.Kernel, ev) {
			own = append(own, ev)
		}
	}
	if len(own) > 0 {
		line += ": " + strings.Join(own, "; ")
	}
	if len(v.Kernel) > 0 {
		line += " (see the kernel lines)"
	}
	return line
}
