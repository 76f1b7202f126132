package run

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/mqblast/mqblast/bench"
	"github.com/mqblast/mqblast/internal/countfmt"
	"github.com/mqblast/mqblast/report"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/run/spec"
	"github.com/mqblast/mqblast/scenario"
	"github.com/mqblast/mqblast/tuning"
)

// A connection-count search (--find connections) grows the population of connections held
// at once: each step dials, at the scenario's connection_rate, the clients that bring the
// connections open up to its count, waits until every dial has its verdict, then holds
// them all for --step and is judged: the connect latency and failed connects of its dials,
// the connections dropped while it held, the broker's CPU, and whether the count is open at
// its end. Nothing is torn down between steps, so the search only climbs: a count below the
// population already held cannot be tried again. The first failure (confirmed by a repeat
// that dials the missing connections once more) ends it; --factor sets how fine the climb
// is, and the failed step's held count says how many the broker held when it refused.

// prepareCountLimit is prepareLimit for a connection-count search of a plan of clients:
// its rates are counts, bounded by the scenario's clients and by this process's
// descriptors.
func prepareCountLimit(s *scenario.Scenario, clients int, lo *searchOptions) error {
	if lo.MaxRate == 0 {
		lo.MaxRate = float64(clients)
	}
	if lo.StartRate == 0 {
		lo.StartRate = math.Ceil(lo.MaxRate / 8)
	}
	lo.StartRate, lo.MaxRate = math.Ceil(lo.StartRate), math.Floor(lo.MaxRate)
	pace := s.Parameters.ConnectionRate
	switch {
	case pace <= 0:
		return usage(spec.Errorf("scenario.set", "a connection-count search dials each step's new connections at parameters.connection_rate, "+
			"and it is 0 (as fast as possible): give it (--set parameters.connection_rate=500)"))
	case lo.StartRate < 1:
		return usage(spec.Errorf("limit.start_rate", "{limit.start_rate} %s: want a count of connections of at least 1", number(lo.StartRate)))
	case lo.StartRate > lo.MaxRate:
		return usage(spec.Errorf("limit.start_rate", "{limit.start_rate} %s is above {limit.max_rate} %s", number(lo.StartRate), number(lo.MaxRate)))
	case lo.MaxRate > float64(clients):
		return usage(spec.Errorf("limit.max_rate", "{limit.max_rate} %s connections: the scenario has %s clients (each holds one): raise publishers.client_count, or lower {limit.max_rate}",
			number(lo.MaxRate), countfmt.Thousands(int64(clients))))
	}
	if lim, err := tuning.ProcessNoFile(); err == nil && lim.Hard > 0 && lo.MaxRate+fdHeadroom > float64(lim.Hard) {
		return usage(spec.Errorf("limit.max_rate", "{limit.max_rate} %s connections is more than this process may hold: RLIMIT_NOFILE %s (less %d for its own files); "+
			"raise it (mqblast check says how), or lower {limit.max_rate}: the search runs in one process, so this host's limit, not the broker's, would end it",
			number(lo.MaxRate), countfmt.Thousands(int64(lim.Hard)), fdHeadroom))
	}
	p := &s.Parameters
	p.Stages = nil
	p.Warmup = 0
	p.Duration = lo.MaxDuration
	return nil
}

// controlCount runs a connection-count search on a paused connect phase.
func (s *search) controlCount(ctx context.Context, cc bench.ConnectControl, runStart time.Time) {
	at := runStart.Add(time.Since(runStart).Truncate(time.Second) + 2*time.Second)
	rel := func(t time.Time) float64 { return t.Sub(runStart).Seconds() }
	if !s.until(ctx, rel(at)) { // what the broker holds with none of the run's connections
		return
	}
	s.base = s.memory(0, rel(at))
	room := func(count float64) bool { return count <= float64(s.clients) }
	s.lo.Precision = math.Inf(1) // a count search does not bisect: its first failure ends it
	s.climb(ctx, at, room, func(count float64, at time.Time) (*result.LimitStep, time.Time, bool) {
		return s.probeCount(ctx, cc, count, s.pace, at, runStart)
	})
	if s.out.Ended == "precision" {
		s.out.Ended = "first_failure"
	}
}

// held is the connections open at the end of the intervals seen.
func (s *search) held() int64 {
	if n := len(s.seen.Intervals); n > 0 {
		return s.seen.Intervals[n-1].Established
	}
	return 0
}

// memory is the broker's resident set (its pid, or its host's process endpoint) and its
// host's memory in use, averaged over the intervals whose middle lies in [from, to); 0
// where not sampled.
func (s *search) memory(from, to float64) (m stepMemory) {
	var nr, nh float64
	prev := 0.0
	for _, iv := range s.seen.Intervals {
		mid := (prev + iv.TS) / 2
		prev = iv.TS
		if mid < from || mid >= to {
			continue
		}
		h := iv.BrokerHost
		switch {
		case iv.BrokerRSSBytes > 0:
			nr, m.rss = nr+1, m.rss+float64(iv.BrokerRSSBytes)
		case h != nil && h.HasProcess && h.ProcessRSSBytes > 0:
			nr, m.rss = nr+1, m.rss+h.ProcessRSSBytes
		}
		if h != nil && h.HasHost && h.MemUsedBytes > 0 {
			nh, m.host = nh+1, m.host+h.MemUsedBytes
		}
	}
	if nr > 0 {
		m.rss /= nr
	}
	if nh > 0 {
		m.host /= nh
	}
	return m
}

// stepMemory is the broker's memory over a window: its process's resident set and its
// host's memory in use, in bytes (0: not sampled).
type stepMemory struct{ rss, host float64 }

// probeCount grows the connections open to count (dialing the clients that are missing at
// pace connections a second from at), waits until every dial has its verdict (at least
// Pause), holds them for a step, and judges it: its dials' connect latency and failures, the
// connections dropped, and the count open at its end; its CPU and the broker's memory
// over the hold after Settle.
func (s *search) probeCount(ctx context.Context, cc bench.ConnectControl, count, pace float64, at, runStart time.Time) (_ *result.LimitStep, next time.Time, ok bool) {
	lo := &s.lo
	rel := func(t time.Time) float64 { return t.Sub(runStart).Seconds() }
	if !sleepUntil(ctx, at) {
		return nil, next, false
	}
	before := s.held()
	dialed := int64(0)
	for _, iv := range s.seen.Intervals {
		dialed += iv.Connected + iv.Failed
	}
	dialed += cc.ConnectPending()
	need := max(int64(count)-before, 0)
	need = min(need, int64(s.clients)-dialed) // the clients never dialed
	s.stepStarts(float64(count))
	fmt.Fprintf(s.log, "limit: step %d: %s connections (%s open, dialing %s at %s/s), held for %v\n", len(s.out.Steps)+1,
		countfmt.Thousands(int64(count)), countfmt.Thousands(before), countfmt.Thousands(need), report.RateText(pace), lo.Step)
	wait0, ok0 := tuning.SelfRunDelay()
	t0 := time.Now()
	if need > 0 {
		if err := cc.SetConnectRate(pace); err != nil {
			fmt.Fprintf(s.log, "limit: cannot set the connect rate: %v\n", err)
		}
		// the dials are due (i-from)/pace apart: the last one due just before the pause
		if !sleepUntil(ctx, time.Now().Add(time.Duration((float64(need)-0.5)/pace*float64(time.Second)))) {
			cc.PauseConnect()
			return nil, next, false
		}
		cc.PauseConnect()
	}
	// until every dial has its verdict and an interval passed in which none connected
	ready, ok := s.pause(ctx, time.Now().Add(lo.Pause), runStart, rel, func(last *result.Interval) bool {
		return cc.ConnectPending() == 0 && last.Connected == 0 && last.Failed == 0
	})
	if !ok {
		return nil, next, false
	}
	end := ready.Add(lo.Step)
	if !s.until(ctx, rel(end)) {
		return nil, next, false
	}
	wait1, ok1 := tuning.SelfRunDelay()
	st := &result.LimitStep{Index: len(s.out.Steps), Rate: count, PerClient: count, StageSummary: result.Window(&s.seen, rel(at), rel(end))}
	st.Held = s.held()
	s.cpu(st, rel(ready.Add(lo.Settle)), rel(end))
	m := s.memory(rel(ready.Add(lo.Settle)), rel(end))
	st.BrokerRSSBytes, st.BrokerHostMemUsedBytes = m.rss, m.host
	if span := time.Since(t0).Seconds(); ok0 && ok1 && span > 0 {
		st.RunDelayShare = (wait1 - wait0).Seconds() / span
	}
	s.judge(st)
	if st.Held < int64(count) {
		st.OK = false
		st.Failed = append(st.Failed, fmt.Sprintf("count not held: %s connections open of %s (%s connects failed in the step)",
			countfmt.Thousands(st.Held), countfmt.Thousands(int64(count)), countfmt.Thousands(st.Connections.Failed)))
	}
	verdict := s.stalled(st, rel(at))
	fmt.Fprintf(s.log, "limit: step %d: %s connections asked, %s open, connect p99 %s, failed %d: %s\n", st.Index+1,
		countfmt.Thousands(int64(count)), countfmt.Thousands(st.Held), result.Micros(st.ConnectLatencyUS.P99), st.Connections.Failed, verdict)
	s.out.Steps = append(s.out.Steps, *st)
	return &s.out.Steps[len(s.out.Steps)-1], end, true
}

// finishCount sets what each connection cost the broker (the slope of its memory over the
// connections held at the steps that held, from the run's start with none when it was
// sampled then) and, for a
// count search whose first failed step's connects failed or whose connections dropped, who
// set the limit: the broker, unless the client ran out of its own descriptors or source
// ports. It returns false when the run's judgement is to decide (the step failed by its
// latency or CPU alone).
func (s *search) finishCount(res *result.Result) bool {
	out := s.out
	var rss, host, xr, xh []float64 // connections held, and the memory with them
	if s.base.rss > 0 {
		rss, xr = append(rss, 0), append(xr, s.base.rss)
	}
	if s.base.host > 0 {
		host, xh = append(host, 0), append(xh, s.base.host)
	}
	for _, st := range out.Steps {
		if !st.OK || st.Overruled || st.Held == 0 {
			continue
		}
		if st.BrokerRSSBytes > 0 {
			rss, xr = append(rss, float64(st.Held)), append(xr, st.BrokerRSSBytes)
		}
		if st.BrokerHostMemUsedBytes > 0 {
			host, xh = append(host, float64(st.Held)), append(xh, st.BrokerHostMemUsedBytes)
		}
	}
	out.BrokerRSSPerConnBytes = slope(rss, xr)
	// The host's memory is every process's there: on a host with other work its slope can
	// fall while connections are added, which is not their cost.
	out.BrokerHostMemPerConnBytes = max(slope(host, xh), 0)
	if out.BrokerRSSPerConnBytes > 0 && out.BrokerHostMemPerConnBytes > out.BrokerRSSPerConnBytes {
		out.BrokerKernelPerConnBytes = out.BrokerHostMemPerConnBytes - out.BrokerRSSPerConnBytes
	}
	st := s.last
	if st == nil || (st.Connections.Failed == 0 && st.BrokerStalled.Dropped == 0) {
		return false
	}
	out.FailedSLO = st.Failed
	var client, broker []string // the causes: the client's own, and the broker's
	for cause, n := range res.Connections.FailedBy {
		line := fmt.Sprintf("%s %s", countfmt.Thousands(n), cause)
		if cause == "fd_limit" || cause == "address_exhausted" {
			client = append(client, line)
		} else {
			broker = append(broker, line)
		}
	}
	for reason, n := range res.Connections.Refused {
		broker = append(broker, fmt.Sprintf("%s refused (CONNACK %s)", countfmt.Thousands(n), reason))
	}
	slices.Sort(client)
	slices.Sort(broker)
	out.Evidence = append(out.Evidence, fmt.Sprintf("at %s connections asked the broker held %s: %s connects failed in the step",
		countfmt.Thousands(int64(st.Rate)), countfmt.Thousands(st.Held), countfmt.Thousands(st.Connections.Failed)))
	if st.BrokerStalled.Dropped > 0 {
		out.Evidence = append(out.Evidence, fmt.Sprintf("%s connections dropped while held", countfmt.Thousands(st.BrokerStalled.Dropped)))
	}
	if len(client) > 0 {
		out.LimitedBy, out.LowerBound = "client", true
		out.Evidence = append(out.Evidence, "the client ran out: "+strings.Join(client, ", "))
		out.Fix = "the client's own descriptors or source ports set this limit, so it is a lower bound for the broker: raise RLIMIT_NOFILE " +
			"or the local port range (mqblast check), or add source addresses (--bind) or client hosts"
	} else {
		out.LimitedBy = "broker"
		why := "the broker refused or did not answer connects: " + strings.Join(broker, ", ")
		if strings.Contains(why, "timeout") {
			why += " (no CONNACK in time: the broker stopped accepting; its accept queue filled — its descriptor or connection limit)"
		}
		out.Evidence = append(out.Evidence, why)
		out.Fix = "the broker's connection limit: raise its descriptor limit (LimitNOFILE, ulimit -n) and its own cap (Mosquitto: max_connections), " +
			"and its host's memory for what each connection costs"
	}
	run := res.Evidence()
	out.Evidence = append(out.Evidence, run.Kernel...) // the accept queue's overflows, on the broker's host
	res.LimitedBy, res.LimitedByReason = out.LimitedBy, out.Evidence[len(out.Evidence)-1]
	return true
}

// stalled fails st when the broker stalled in it, marks it as the broker gone (the step
// started from seconds into the run) when it left, and returns its verdict in words.
func (s *search) stalled(st *result.LimitStep, from float64) string {
	if st.BrokerStalled.Stalled {
		st.OK = false
		st.Failed = append(st.Failed, "broker stalled: "+strings.Join(st.BrokerStalled.Evidence, "; "))
	}
	s.gone(st, from)
	if !st.OK {
		return "FAILS: " + strings.Join(st.Failed, "; ")
	}
	return "holds"
}

// slope is the least-squares slope of y over x; 0 with fewer than two distinct x.
func slope(x, y []float64) float64 {
	if len(x) < 2 {
		return 0
	}
	var mx, my float64
	for i := range x {
		mx, my = mx+x[i], my+y[i]
	}
	mx, my = mx/float64(len(x)), my/float64(len(x))
	var num, den float64
	for i := range x {
		num += (x[i] - mx) * (y[i] - my)
		den += (x[i] - mx) * (x[i] - mx)
	}
	if den == 0 {
		return 0
	}
	return num / den
}

// checkSLOKind refuses an SLO expression that names a figure the kind of search does not
// produce: a connection search (rate or count) has no messages, a publish-rate search no
// connects in its steps.
func checkSLOKind(kind string, slo []string) error {
	connects := kind != result.KindPublishRate
	for _, e := range slo {
		path := strings.TrimSpace(e)
		if i := strings.IndexAny(path, "<>=!"); i >= 0 {
			path = strings.TrimSpace(path[:i])
		}
		top, _, _ := strings.Cut(path, ".")
		var ok bool
		switch top {
		case "connect_latency_us", "connections":
			ok = connects
		case "latency_us", "latency_raw_us", "schedule_lag_us", "messages", "throughput", "offered_per_s", "client", "broker_dropped":
			ok = !connects
		default:
			ok = true
		}
		if !ok {
			what := "messages: its SLO is over connect_latency_us, connections.failed and broker_stalled"
			if !connects {
				what = "connects in its steps (the clients connect once, before it): its SLO is over latency_us, messages, throughput and broker_stalled"
			}
			return usage(spec.Errorf("limit.slo", "{limit.slo} %s: a %s search has no %s", e, kind, what))
		}
	}
	return nil
}
