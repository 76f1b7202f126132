package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mqblast/mqblast/internal/countfmt"
	"github.com/mqblast/mqblast/internal/termtext"
	"github.com/mqblast/mqblast/result"
)

// minConnsPerConnection is the fewest established connections for which the summary shows
// per-connection figures (RSS per connection, CPU per connect). Below it they are mostly
// the fixed costs (runtime start, heap arenas, RSS that grows by pages and spans) divided
// by a handful: against the embedded broker, 100 connections gave 42 KB of broker RSS,
// 5.7 KB of client RSS and 930 µs of client CPU each, 1,000 gave 30 KB, 741 B and 158 µs,
// 5,000 gave 28 KB, 469 B and 127 µs. The result document keeps them at any count.
const minConnsPerConnection = 1000

// WriteSummary writes the text summary of r: one line per figure a reader checks first
// (what ran, connections, delivery, throughput, latency, the verdicts, the host's and the
// broker's figures, errors), as mqblast run prints it at the end.
func WriteSummary(w io.Writer, r *result.Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	v := r.Verdicts() // one judgement: the headlines below never contradict one another
	c := &r.Connections
	perConn := c.Established >= minConnsPerConnection
	status := "complete"
	if r.Interrupted {
		status = "interrupted (partial result)"
	}
	fmt.Fprintf(tw, "run\t%s, %s\n", status, r.EndedAt.Sub(r.StartedAt).Round(1e6))
	if r.Run != nil {
		fmt.Fprintf(tw, "run id\t%s\n", termtext.Line(r.Run.String()))
	}
	fmt.Fprintf(tw, "broker\t%s\n", termtext.Line(strings.Join(r.Broker, ", ")))
	if r.Calibration {
		fmt.Fprintf(tw, "calibration\tagainst mqblast %s: this measures the client host's own ceiling, not a broker\n", termtext.Line(r.BrokerKind))
	}
	fmt.Fprintf(tw, "connections\t%d of %d established, %d failed, %d dropped while held\n",
		c.Established, c.Target, c.Failed, c.Dropped)
	if c.Reconnected > 0 || c.ReconnectFailed > 0 {
		line := fmt.Sprintf("%d times after drops", c.Reconnected)
		for _, g := range r.Groups {
			if g.Churn != nil {
				line = fmt.Sprintf("%d times after drops and reconnect storms", c.Reconnected)
				break
			}
		}
		if h := c.ReconnectLatencyUS; h != nil {
			line += fmt.Sprintf(", reconnect latency p50 %s  p99 %s  max %s", result.Micros(h.P50), result.Micros(h.P99), result.Micros(h.Max))
		}
		if c.ReconnectFailed > 0 {
			line += fmt.Sprintf("; %d reconnect attempts failed%s (attempts, not clients)", c.ReconnectFailed, termtext.Line(countfmt.ByCause(c.ReconnectFailedBy)))
		}
		fmt.Fprintf(tw, "reconnected\t%s\n", line)
	}
	m := &r.Messages
	messaging := m.Scheduled > 0 || m.Published > 0 || m.Received > 0 || m.Subscribed > 0
	if !messaging || c.ConnectPhaseS >= 1 { // a rate over a few ms of a handful of clients means nothing
		fmt.Fprintf(tw, "connect rate\t%.0f/s over %.1fs\n", c.ConnectRatePerS, c.ConnectPhaseS)
	}
	l := c.ConnectLatencyUS
	fmt.Fprintf(tw, "connect latency\tp50 %s  p90 %s  p99 %s  max %s  (TCP start to CONNACK)\n",
		result.Micros(l.P50), result.Micros(l.P90), result.Micros(l.P99), result.Micros(l.Max))
	if h := c.TLSHandshakeUS; h != nil {
		fmt.Fprintf(tw, "tls handshake\t%d (%d resumed), p50 %s  p99 %s  max %s, %.0f µs CPU each (part of connect latency)\n",
			c.TLSHandshakes, c.TLSResumed, result.Micros(h.P50), result.Micros(h.P99), result.Micros(h.Max), c.TLSHandshakeCPUUSPerOp)
	}
	if rl := r.Transport.RecordLayer; len(rl) > 0 {
		fmt.Fprintf(tw, "tls record layer\tloop %d, tls.Conn %d (what sealed and opened the records of the TLS connections)\n",
			rl["loop"], rl["tls.Conn"])
	}
	if h := c.CertMintUS; h != nil {
		fmt.Fprintf(tw, "client certs minted\t%d, p50 %s  p99 %s  max %s, %.0f µs CPU each (part of the handshake)\n",
			c.CertsMinted, result.Micros(h.P50), result.Micros(h.P99), result.Micros(h.Max), c.CertMintCPUUSPerOp)
	}
	if h := c.WSUpgradeUS; h != nil {
		fmt.Fprintf(tw, "websocket upgrade\tp50 %s  p99 %s  max %s\n", result.Micros(h.P50), result.Micros(h.P99), result.Micros(h.Max))
	}
	if c.Pings > 0 {
		p := c.PingRTTUS
		fmt.Fprintf(tw, "ping rtt\t%d pings, p50 %s  p99 %s  max %s\n", c.Pings, result.Micros(p.P50), result.Micros(p.P99), result.Micros(p.Max))
	}
	if messaging {
		fmt.Fprintf(tw, "scheduled\t%d messages: %d published (written), %d unsent%s\n",
			m.Scheduled, m.Published, m.UnsentTotal, termtext.Line(countfmt.ByCause(m.Unsent)))
		if line := CarrierLine(r.Measurement); line != "" {
			fmt.Fprintf(tw, "carrier\t%s\n", termtext.Line(line))
		}
		if m.ExpectedUnknown {
			fmt.Fprintf(tw, "delivery\t%s: %d received, %d duplicated, %d out of order\n", unknownExpected, m.Received, m.Duplicated, m.OutOfOrder)
		} else {
			fmt.Fprintf(tw, "delivery\t%d expected: %d received, %d lost, %d in flight at the end, %d in flight when a session ended; %d duplicated, %d out of order\n",
				m.Expected, m.Received, m.Lost, m.InFlightAtEnd, m.InFlightLost, m.Duplicated, m.OutOfOrder)
			if m.OwedAtEnd > 0 {
				fmt.Fprintf(tw, "OWED\t%s\n", OwedText(m))
			}
			if m.Retained > 0 {
				fmt.Fprintf(tw, "retained\t%d copies from the broker's retained store at a subscription, %d of them ones the client had: not duplicates\n", m.Retained, m.RetainedAgain)
			}
			if m.Redelivered > 0 {
				fmt.Fprintf(tw, "redelivered\t%d copies again at QoS 1 (DUP flag set, or after a reconnect): re-deliveries QoS 1 permits, not duplicates\n", m.Redelivered)
			}
			if m.RefusedCopies > 0 {
				fmt.Fprintf(tw, "not delivered\t%d expected copies of messages the broker refused (not lost: it said no)\n", m.RefusedCopies)
			}
			if m.ResponsesUnsent > 0 {
				fmt.Fprintf(tw, "not answered\t%d requests a responder did not answer, its window of responses in flight full (not lost: it did not send)\n", m.ResponsesUnsent)
			}
			if m.NotSharedCopies > 0 {
				fmt.Fprintf(tw, "not delivered\t%d expected copies on $share/ filters of a broker that does not share (not lost: see broker behaviour)\n", m.NotSharedCopies)
			}
		}
		if line := SilentLine(r); line != "" {
			fmt.Fprintf(tw, "LOST\t%s\n", line)
		} else if line := NotJudgedLine(m); line != "" {
			fmt.Fprintf(tw, "silent publishers\t%s\n", line)
		}
		if m.Inexact != "" {
			fmt.Fprintf(tw, "inexact\treceived, duplicated, lost and in flight count only what each part saw of some streams: %s\n", termtext.Line(m.Inexact))
		}
		if m.Acked > 0 || m.InFlightDropped > 0 || m.RefusedTotal > 0 || m.Unacknowledged > 0 {
			refused := ""
			if m.RefusedTotal > 0 {
				refused = fmt.Sprintf("; %d refused by the broker%s", m.RefusedTotal, termtext.Line(countfmt.ByCause(m.Refused)))
			}
			if m.PublishedQoS12 > 0 {
				fmt.Fprintf(tw, "acknowledged\t%d of %d published (QoS 1/2)%s; %d never acknowledged%s, %d of them when their session ended\n",
					m.Acked, m.PublishedQoS12, refused, m.Unacknowledged, termtext.Line(countfmt.ByCause(m.UnacknowledgedBy)), m.InFlightDropped)
			} else { // a document written before the QoS 1/2 messages were counted apart
				fmt.Fprintf(tw, "acknowledged\t%d of %d published (QoS 1/2)%s; %d unacknowledged when their session ended\n",
					m.Acked, m.Published, refused, m.InFlightDropped)
			}
		}
		if m.UnexpectedTotal > 0 || m.Unmeasured > 0 {
			fmt.Fprintf(tw, "not ours\t%d unexpected%s, %d unmeasured (no mqblast header); neither offsets a loss\n",
				m.UnexpectedTotal, termtext.Line(countfmt.ByCause(m.Unexpected)), m.Unmeasured)
		}
		if m.SubscribeFailed > 0 {
			fmt.Fprintf(tw, "subscriptions\t%d refused%s\n", m.SubscribeFailed, termtext.Line(countfmt.ByCause(m.SubscribeRefused)))
		}
		t := &r.Throughput
		fmt.Fprintf(tw, "throughput\t%.0f msg/s written, %.0f msg/s arrived (measure window %.1fs)\n", t.PublishPerS, t.ReceivePerS, t.WindowS)
		if lat := r.LatencyUS; lat.Count > 0 {
			fmt.Fprintf(tw, "latency\tp50 %s  p90 %s  p99 %s  p99.9 %s  max %s  (from the due time, %d messages)\n",
				result.Micros(lat.P50), result.Micros(lat.P90), result.Micros(lat.P99), result.Micros(lat.P999), result.Micros(lat.Max), lat.Count)
		}
		if raw := r.LatencyRaw; raw.Count > 0 {
			fmt.Fprintf(tw, "latency raw\tp50 %s  p99 %s  max %s  (from the actual write)\n", result.Micros(raw.P50), result.Micros(raw.P99), result.Micros(raw.Max))
		}
		lag := r.Client.ScheduleLagUS
		fmt.Fprintf(tw, "schedule lag\tp99 %s  max %s  (the client's own lateness)\n", result.Micros(lag.P99), result.Micros(lag.Max))
		if w := result.UnacknowledgedWords(m); w != "" {
			fmt.Fprintf(tw, "UNACKNOWLEDGED\t%s\n", w)
		}
		if v.Stalled {
			fmt.Fprintf(tw, "BROKER STALLED\tthe broker held the publishers back: %s\n", termtext.Line(strings.Join(r.BrokerStalled.Evidence, "; ")))
		}
		if v.Saturated {
			fmt.Fprintf(tw, "SATURATED\tthe client, not the broker, limited this run: %s\n", termtext.Line(strings.Join(v.SaturationEvidence, "; ")))
		}
		for _, st := range r.Stages {
			fmt.Fprintf(tw, "stage %d\t%s\n", st.Index, StageLine(&st))
		}
	}
	for i := range r.Groups {
		fmt.Fprintf(tw, "group %s\t%s\n", termtext.Line(r.Groups[i].Name), GroupLine(&r.Groups[i]))
	}
	for _, b := range r.BrokerBehaviour {
		fmt.Fprintf(tw, "BROKER BEHAVED\t%s\n", termtext.Line(b.Evidence))
	}
	writeLimit(tw, r)
	writeSoak(tw, r)
	writeThresholds(tw, r.Thresholds)
	if k := r.Kernel; k != nil {
		for _, f := range k.Findings {
			fmt.Fprintf(tw, "KERNEL\t%s\n", termtext.Line(f.String()))
		}
	}
	if v.HostLimited {
		fmt.Fprintf(tw, "HOST LIMITED\t%s\n", termtext.Line(v.HostLine()))
	}
	if v.LimitedBy != "" && r.Limit == nil { // a search's LIMIT lines say it, with the failed step's evidence
		line := "the " + v.LimitedBy + ": " + v.Reason
		if v.LowerBound() {
			line += " (the figures are a lower bound for the broker)"
		}
		fmt.Fprintf(tw, "limited by\t%s\n", termtext.Line(line))
	}
	if b := r.BrokerProcess; b != nil {
		line := fmt.Sprintf("cpu %.2fs (avg %.0f%%, peak %.0f%% of a core), rss %.1f MiB (peak %.1f MiB), %d fds",
			b.CPUS, b.CPUPercentAvg, b.CPUPercentPeak, float64(b.RSSBytes)/(1<<20), float64(b.RSSPeakBytes)/(1<<20), b.FDs)
		if b.CPUPerMessageUS > 0 {
			line += fmt.Sprintf(", %.2f µs cpu per message", b.CPUPerMessageUS)
		}
		if b.RSSPerConnectionBytes > 0 && perConn {
			line += fmt.Sprintf(", %.0f B rss per connection", b.RSSPerConnectionBytes)
		}
		switch {
		case b.PID > 0:
			fmt.Fprintf(tw, "broker process\tpid %d: %s\n", b.PID, line)
		case b.Source != "":
			fmt.Fprintf(tw, "broker process\t%s: %s\n", termtext.Line(b.Source), line)
		}
		if c := b.Cgroup; c != nil {
			if c.Error != "" {
				fmt.Fprintf(tw, "broker cgroup\t%s: %s\n", termtext.Line(c.Path), termtext.Line(c.Error))
			} else {
				fmt.Fprintf(tw, "broker cgroup\t%s: cpu %.2fs, memory %.1f MiB (peak %.1f MiB)\n", termtext.Line(c.Path), c.CPUS,
					float64(c.MemoryBytes)/(1<<20), float64(c.MemoryPeakBytes)/(1<<20))
			}
		}
	}
	writeBrokerHost(tw, r)
	for _, l := range brokerSysLines(r) {
		fmt.Fprintf(tw, "broker $SYS\t%s\n", l)
	}
	for _, e := range r.Errors {
		fmt.Fprintf(tw, "error\t%s: %d (e.g. %s)\n", termtext.Line(e.Kind), e.Count, termtext.Line(e.Example))
	}
	cl := &r.Client
	switch {
	case messaging: // per-connection costs of a messaging run are message buffers, not connections
		wait := ""
		if cl.RunDelayS > 0 {
			wait = fmt.Sprintf(", waited %.2fs for a CPU in the measure window", cl.RunDelayS)
		}
		fmt.Fprintf(tw, "client\tcpu %.2fs, max rss %.1f MiB%s\n", cl.CPUS, float64(cl.MaxRSSBytes)/(1<<20), wait)
	case perConn:
		fmt.Fprintf(tw, "client\tcpu %.2fs (%.1f µs per connect), max rss %.1f MiB, %.0f B rss per connection\n",
			cl.CPUS, cl.CPUPerConnectUS, float64(cl.MaxRSSBytes)/(1<<20), cl.RSSPerConnectionBytes)
	default:
		fmt.Fprintf(tw, "client\tcpu %.2fs, max rss %.1f MiB\n", cl.CPUS, float64(cl.MaxRSSBytes)/(1<<20))
	}
	return tw.Flush()
}

// CarrierLine says on one line where each publishing group's messages carried their
// measurement ("devices: mark (template), gateways: header (fill)"): "" when no group
// carried it other than in the header before its payload and there is one group, as a run
// whose messages all start with the header says nothing.
func CarrierLine(ms []result.GroupMeasurement) string {
	other := false
	parts := make([]string, 0, len(ms))
	for _, g := range ms {
		other = other || g.Carrier != "header"
		p := fmt.Sprintf("%s: %s (%s)", g.Group, g.Carrier, g.Payload)
		if g.Carrier == "none" {
			p = fmt.Sprintf("%s: none (%s, its copies unmeasured)", g.Group, g.Payload)
		}
		parts = append(parts, p)
	}
	if !other && len(ms) < 2 {
		return ""
	}
	return strings.Join(parts, ", ")
}

// StageLine is the summary of a stage on one line: its span and rate, what was offered,
// written and arrived per second, latency, lost and unsent, and its verdicts.
func StageLine(st *result.Stage) string {
	how := "step to"
	if st.Ramp {
		how = "ramp to"
	}
	if st.Source != "" { // a change made while the run went on
		how = termtext.Line(st.Source) + ": " + how
	}
	lat := "latency -"
	if l := st.LatencyUS; l.Count > 0 {
		lat = "latency p50 " + result.Micros(l.P50) + " p99 " + result.Micros(l.P99)
	}
	line := fmt.Sprintf("%s-%ss, %s %s msg/s per publisher: offered %.0f/s, written %.0f/s, arrived %.0f/s, %s, lost %d, unsent %d",
		num(st.StartS), num(st.StartS+st.DurationS), how, num(st.PublishRate), st.OfferedPerS, st.Throughput.PublishPerS,
		st.Throughput.ReceivePerS, lat, st.Messages.Lost, st.Messages.UnsentTotal)
	if st.Client.Saturated {
		line += "; CLIENT SATURATED"
	}
	if st.BrokerStalled.Stalled {
		line += "; BROKER STALLED"
	}
	for _, t := range st.Thresholds {
		verdict := "ok"
		if !t.OK {
			verdict = "FAILED"
		}
		line += fmt.Sprintf("; %s %s", termtext.Line(t.Expr), verdict)
	}
	return line
}

// unknownExpected says why a run that does not know its publishers (messages.expected_unknown)
// shows no expected or lost copies.
const unknownExpected = "expected unknown, so lost unknown (the run does not know its publishers)"

// writeThresholds writes one summary line per threshold:
// "threshold  messages.lost==0  value 12  FAILED".
func writeThresholds(w io.Writer, ts []result.Threshold) {
	for _, t := range ts {
		verdict := "ok"
		if !t.OK {
			verdict = "FAILED"
		}
		fmt.Fprintf(w, "threshold\t%s  value %s  %s\n", termtext.Line(t.Expr), t.ValueText(), verdict)
	}
}

// writeBrokerHost writes what the broker host's endpoints said (--broker-metrics) and the
// verdict on the broker's CPU.
func writeBrokerHost(tw io.Writer, r *result.Result) {
	if h := r.BrokerHost; h != nil {
		for _, s := range h.Sources {
			kinds := "no series mqblast knows"
			if len(s.Kinds) > 0 {
				kinds = strings.Join(s.Kinds, ", ")
			}
			line := fmt.Sprintf("%s (%s): %d scrapes, %d failed", s.URL, kinds, s.ScrapesOK+s.Failed, s.Failed)
			if s.LastError != "" {
				line += ", last error: " + s.LastError
			}
			fmt.Fprintf(tw, "broker metrics\t%s\n", termtext.Line(line))
		}
		if h.Gaps > 0 {
			fmt.Fprintf(tw, "broker metrics\t%d intervals with a gap (a scrape failed or timed out): no figure was guessed for them\n", h.Gaps)
		}
		if h.CPUs > 0 {
			fmt.Fprintf(tw, "broker host\tcpu avg %.0f%%, peak %.0f%% of %d CPUs; memory used avg %.1f MiB, peak %.1f MiB, available min %.1f MiB; "+
				"network in %s/s avg (peak %s/s), out %s/s avg (peak %s/s); tcp established max %.0f, time-wait max %.0f",
				h.CPUPercentAvg, h.CPUPercentPeak, h.CPUs, h.MemUsedAvgBytes/(1<<20), h.MemUsedPeakBytes/(1<<20), h.MemAvailableMinBytes/(1<<20),
				bytesText(h.RxBytesPerSAvg), bytesText(h.RxBytesPerSPeak), bytesText(h.TxBytesPerSAvg), bytesText(h.TxBytesPerSPeak),
				h.TCPEstablishedMax, h.TCPTimeWaitMax)
			if h.ListenDrops > 0 || h.ListenOverflows > 0 {
				fmt.Fprintf(tw, "; LISTEN DROPS %.0f, overflows %.0f (its accept queue was full)", h.ListenDrops, h.ListenOverflows)
			}
			fmt.Fprintln(tw)
		}
		if p := h.Process; p != nil {
			fmt.Fprintf(tw, "broker process\t%s: cpu %.2fs (avg %.0f%%, peak %.0f%% of a core), rss %.1f MiB, %d fds, %.2f µs cpu per message\n",
				termtext.Line(p.Source), p.CPUS, p.CPUPercentAvg, p.CPUPercentPeak, float64(p.RSSBytes)/(1<<20), p.FDs, p.CPUPerMessageUS)
		}
		for _, k := range sortedKeys(h.Series) {
			x := h.Series[k]
			unit := ""
			if x.Counter {
				unit = "/s"
			}
			fmt.Fprintf(tw, "broker series\t%s: avg %s%s, peak %s%s over %d intervals\n", termtext.Line(k), num(x.Avg), unit, num(x.Peak), unit, x.Samples)
		}
	}
	if b := r.BrokerBusy; b != nil && b.Busy {
		fmt.Fprintf(tw, "BROKER BUSY\tthe broker's CPU was the limit: %s\n", termtext.Line(strings.Join(b.Evidence, "; ")))
	}
}

// bytesText is a byte count in B, KiB, MiB or GiB.
func bytesText(b float64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.2f GiB", b/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", b/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", b/(1<<10))
	}
	return fmt.Sprintf("%.0f B", b)
}

// num is a figure with the precision it needs.
func num(v float64) string {
	if v == float64(int64(v)) || v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

// GroupLine is a group's line in the summary: its clients and connections, its storm, the
// messages it published (their delivery and latency, wherever they arrived) and what its
// clients received.
func GroupLine(g *result.Group) string {
	c, m := &g.Connections, &g.Messages
	noun := "clients"
	if g.Clients == 1 {
		noun = "client"
	}
	line := fmt.Sprintf("%d %s (%s): %d connected, %d failed, %d dropped", g.Clients, noun,
		termtext.Line(strings.Join(g.Behaviours, "+")), c.Established, c.Failed, c.Dropped)
	if ch := g.Churn; ch != nil {
		kind := "persistent"
		if ch.Clean {
			kind = "clean"
		}
		if ch.RatePerS > 0 {
			line += fmt.Sprintf("; churn from +%gs at %g/s of %d: %d ended (%s sessions)", ch.AtS, ch.RatePerS, ch.Clients, ch.Ended, kind)
		} else {
			line += fmt.Sprintf("; storm at +%gs: %d of %d ended (%s sessions)", ch.AtS, ch.Ended, ch.Clients, kind)
		}
	}
	if c.Reconnected > 0 {
		line += fmt.Sprintf(", %d reconnected", c.Reconnected)
		if h := c.ReconnectLatencyUS; h != nil {
			line += fmt.Sprintf(" (p50 %s p99 %s)", result.Micros(h.P50), result.Micros(h.P99))
		}
	}
	if g.Publishers > 0 {
		line += fmt.Sprintf("; %d publishing: %d published, %d unsent", g.Publishers, m.Published, m.UnsentTotal)
		if !m.ExpectedUnknown && m.Expected > 0 {
			line += fmt.Sprintf(", %d expected: %d received, %d lost, %d in flight", m.Expected, m.Received, m.Lost, m.InFlightAtEnd+m.InFlightLost)
			if m.OwedAtEnd > 0 {
				line += fmt.Sprintf(", %d owed at the end", m.OwedAtEnd)
			}
		}
		if l := g.LatencyUS; l.Count > 0 {
			line += fmt.Sprintf("; latency p50 %s p99 %s max %s", result.Micros(l.P50), result.Micros(l.P99), result.Micros(l.Max))
		}
	}
	if g.Delivered > 0 {
		line += fmt.Sprintf("; its clients received %d", g.Delivered)
		if g.DeliveredOnReturn > 0 {
			line += fmt.Sprintf(" (%d kept for them while away, on their return)", g.DeliveredOnReturn)
		}
	}
	return line
}

// OwedText says what the broker still owed when the drain ended: the copies, the rate at
// which they were still arriving, and how long the drain lasted. They are not lost.
func OwedText(m *result.Messages) string {
	return fmt.Sprintf("%s copies still arriving at %s/s when the drain ended (%s): the broker was still sending them, not lost",
		countfmt.Thousands(m.OwedAtEnd), countfmt.Thousands(m.OwedArrivalPerS), time.Duration(m.DrainS*float64(time.Second)).Round(10*time.Millisecond))
}
