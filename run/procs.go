package run

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"runtime"

	"github.com/mqblast/mqblast/run/spec"
	"github.com/mqblast/mqblast/scenario"
	"github.com/mqblast/mqblast/tuning"
)

// fdHeadroom is what a process needs besides its connections' sockets: stdio, an epoll
// set and an eventfd per event loop, the result file, the embedded broker's pipe.
const fdHeadroom = 64

// chooseProcs turns the Spec's processes into a number: auto (0) takes as many processes
// as the descriptor hard limit requires.
func chooseProcs(procs spec.Procs, plan *scenario.Plan) (int, error) {
	if procs != 0 {
		return int(procs), nil
	}
	lim, err := tuning.ProcessNoFile()
	if err != nil || lim.Hard == 0 {
		return 1, nil
	}
	per := int(min(lim.Hard, 1<<30)) - fdHeadroom
	if per < 100 {
		return 1, nil
	}
	return max(1, (plan.Len()+per-1)/per), nil
}

// Needs converts a plan's estimate into what it needs from this host (one process).
func Needs(p *scenario.Plan) tuning.Needs {
	s := p.Scenario()
	e := p.Estimate()
	n := tuning.Needs{
		Connections:    e.Connections,
		Destinations:   max(len(p.Brokers()), 1),
		SourceAddrs:    max(e.SourceAddresses, 1),
		Procs:          1,
		LocalBroker:    !s.HasServer(),
		BrokerPort:     s.Server.Port,
		ConnectRate:    int(math.Ceil(p.ConnectRate())),
		SocketMemBytes: e.SocketMemoryBytes,
		HeapBytes:      e.MemoryBytes,
	}
	if n.LocalBroker {
		n.BrokerPort = 0
	}
	return n
}

// checkHost runs the host checks for the plan in procs processes and refuses a run bound
// to fail, with the findings on w. It returns the findings, for the result (host.checks).
func checkHost(w io.Writer, plan *scenario.Plan, procs int) (json.RawMessage, error) {
	needs := Needs(plan)
	needs.Procs = procs
	r, err := preflight(w, needs, "this run")
	var checks json.RawMessage
	if b, merr := json.Marshal(r.Findings); merr == nil {
		checks = b
	}
	return checks, err
}

// PreflightLargest checks the host once for the plan with the most connections (a study's
// largest cell) and refuses plans bound to fail, with the findings on w. It returns the
// whole report.
func PreflightLargest(w io.Writer, plans []*scenario.Plan) (json.RawMessage, error) {
	var needs tuning.Needs
	for _, p := range plans {
		if n := Needs(p); n.Connections >= needs.Connections {
			needs = n
		}
	}
	r, err := preflight(w, needs, "this study's largest cell")
	if err != nil {
		return nil, err
	}
	b, _ := json.Marshal(r)
	return b, nil
}

// preflight runs the host checks for needs; when the host is not ready for what, it writes
// the findings on w and returns an errNotReady.
func preflight(w io.Writer, needs tuning.Needs, what string) (tuning.Report, error) {
	r := tuning.Check("/", needs)
	if r.Ready() {
		return r, nil
	}
	fmt.Fprintf(w, "the host is not ready for %s (mqblast check; --no-check skips it):\n", what)
	_ = r.WriteText(w)
	return r, kind(errNotReady, fmt.Errorf("host not ready: %d checks failed", r.Count(tuning.Fail)))
}

// laneRate is the connect rate a worker process dials at in its turn where the run's rate
// allows (Plan.Part): at 1,000 a second and more a loop's wake serves a batch of dials.
const laneRate = 1000

// dialLanes returns how many of procs worker processes on this host dial at once
// (Plan.Part's lanes) for a host's connect rate: as few as give each lane laneRate, no
// more than the cores (more take turns on them anyway), at least one.
func dialLanes(rate float64, procs int) int {
	return min(procs, runtime.NumCPU(), max(1, int(math.Ceil(rate/laneRate))))
}
