package scenario

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mqblast/mqblast/internal/termtext"
)

// WriteBuiltins writes the table of the built-in scenarios (`mqblast scenarios`).
func WriteBuiltins(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTYPE\tCLIENTS\tPUBS\tSUBS\tCONN/S\tPUB MSG/S\tRECV MSG/S\tDURATION")
	for _, in := range Builtins() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", in.Name, in.Type,
			fmtCount(float64(in.Clients)), fmtCount(float64(in.Publishers)), fmtCount(float64(in.Subscribers)),
			fmtCount(in.ConnectionRate), fmtCount(in.PublishPerSec), fmtCount(in.ReceivePerSec), span(in.Duration))
	}
	return tw.Flush()
}

// WritePlanSize writes the size of the plan p of the valid scenario s, read from arg
// (`mqblast validate`): clients, connections and descriptors, messages and bytes per
// second, memory, connect time, the phases and the brokers.
func WritePlanSize(w io.Writer, arg string, s *Scenario, p *Plan) {
	e := p.Estimate()
	par := s.Parameters
	fmt.Fprintf(w, "%s: valid %s scenario %q\n", arg, s.Type, s.Name)
	if p.shared.reports() {
		writeGroups(w, p.shared)
	}
	fmt.Fprintf(w, "  clients      %d (%d publishing, %d subscribing)\n", e.Clients, e.Publishers, e.Subscribers)
	fmt.Fprintf(w, "  connections  %d, %d file descriptors\n", e.Connections, e.FileDescriptors)
	if e.Publishers > 0 {
		fmt.Fprintf(w, "  messages     %s/s out, %s/s in, %d topics\n", trim(e.PublishPerSec), trim(e.ReceivePerSec), e.Topics)
		fmt.Fprintf(w, "  bytes        %s/s out, %s/s in\n", bytesIEC(e.BytesOutPerSec), bytesIEC(e.BytesInPerSec))
	}
	fmt.Fprintf(w, "  memory       %s, socket buffers %s\n", bytesIEC(float64(e.MemoryBytes)), bytesIEC(float64(e.SocketMemoryBytes)))
	fmt.Fprintf(w, "  connect      %s at %s/s\n", span(e.ConnectTime.Round(1e7)), trim(par.ConnectionRate))
	switch {
	case p.Open():
		fmt.Fprintf(w, "  receive      %s (what others publish to the filters)\n", span(par.Duration))
	case e.Publishers == 0:
		fmt.Fprintf(w, "  hold         %s\n", span(par.Duration))
	default:
		fmt.Fprintf(w, "  publish      %s (warm-up %s, then drain %s)\n", span(par.Duration), span(par.Warmup), span(par.Drain))
		if len(par.Stages) > 0 {
			fmt.Fprintf(w, "  stages       %s (msgs/s per publisher; messages above are at the peak)\n", FormatStages(par.Stages))
		}
	}
	if e.SourceAddresses > 0 {
		fmt.Fprintf(w, "  sources      %d addresses\n", e.SourceAddresses)
	}
	if b := p.OwnBrokers(); len(b) > 0 {
		fmt.Fprintf(w, "  own servers  %s (groups with a server of their own)\n", termtext.Line(strings.Join(b, ", ")))
	}
	if b := p.Brokers(); len(b) > 0 {
		fmt.Fprintf(w, "  broker       %s\n", termtext.Line(strings.Join(b, ", ")))
	} else {
		fmt.Fprintf(w, "  broker       none given: run starts the embedded broker\n")
	}
}

// fmtCount formats a count or rate compactly: 950, 1.5K, 50K, 2M.
func fmtCount(x float64) string {
	switch {
	case x == 0:
		return "-"
	case x >= 1e6:
		return trim(x/1e6) + "M"
	case x >= 1e4 || (x >= 1e3 && math.Mod(x, 100) == 0):
		return trim(x/1e3) + "K"
	}
	return trim(x)
}

func trim(x float64) string {
	if x == math.Trunc(x) {
		return strconv.FormatFloat(x, 'f', 0, 64)
	}
	s := strconv.FormatFloat(x, 'f', 1, 64)
	return strings.TrimSuffix(s, ".0")
}

// span formats a duration without zero units: 30m, 1h30m, 10s, 1.5s.
func span(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// bytesIEC formats a byte count with binary units: 512 B, 1.5 KiB, 64 MiB, 2.1 GiB.
func bytesIEC(b float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for b >= 1024 && i < len(units)-1 {
		b /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f B", b)
	}
	return fmt.Sprintf("%.1f %s", b, units[i])
}

// writeGroups writes one line per group of a plan: its clients, behaviours, what it
// publishes and subscribes to, and its storm.
func writeGroups(w io.Writer, sh *planShared) {
	fmt.Fprintf(w, "  groups       %d\n", len(sh.groups))
	for _, g := range sh.groups {
		bs := make([]string, len(g.Behaviours))
		for i, b := range g.Behaviours {
			bs[i] = string(b)
		}
		line := fmt.Sprintf("    %-12s %s (%s), MQTT %s, keepalive %s", termtext.Line(g.Name), clients(g.ClientCount),
			strings.Join(bs, "+"), g.ProtocolVersion, span(g.KeepAlive))
		if g.Publishes() {
			rate := trim(g.PublishRate) + "/s"
			switch g.Arrival {
			case ArrivalPoisson:
				rate += " Poisson"
			case ArrivalBurst:
				rate += fmt.Sprintf(" in bursts of %d", g.BurstSize)
			}
			line += fmt.Sprintf("; %d publishing %s QoS %d to %s", g.Publishers(), rate, g.QoS,
				strconv.Quote(termtext.Line(g.Topics[0])))
			if cycle, _ := topicCycle(g.Topics); len(cycle) > 1 {
				line += fmt.Sprintf(" and %d more, in turn", len(cycle)-1)
			}
			if g.Start > 0 {
				line += " from +" + span(g.Start)
			}
			if !g.ExpectDelivery {
				line += " (for no client of the run)"
			}
		}
		if g.has(BehaviourRequest) {
			who := "answered by the run's respond groups"
			if sh.m.responses(requestTopic(g, 0)) == 0 {
				who = "answered outside the run: its responder must copy the Correlation Data"
			}
			line += fmt.Sprintf("; responses on %s, %s", strconv.Quote(termtext.Line(g.ResponseTopic)), who)
		}
		if len(g.Filters) > 0 {
			fs := make([]string, len(g.Filters))
			for i, f := range g.Filters {
				fs[i] = strconv.Quote(termtext.Line(f))
			}
			line += "; subscribes to " + strings.Join(fs, ", ")
			if g.Responds() {
				line += fmt.Sprintf(", answers requests at QoS %d", g.QoS)
			}
		}
		if !g.CleanSession {
			line += "; persistent session"
			if g.given&cgGivenSessionExpiry != 0 {
				line += " (expiry " + span(g.SessionExpiry) + ")"
			}
		}
		if c := g.Churn; c != nil {
			kind := "persistent"
			if c.CleanSession {
				kind = "clean"
			}
			if c.Rate > 0 {
				line += fmt.Sprintf("; churn: %s/s of %d reconnect from +%s (%s sessions)", trim(c.Rate), g.Churned(), span(c.At), kind)
			} else {
				line += fmt.Sprintf("; storm: %d reconnect at +%s (%s sessions)", g.Churned(), span(c.At), kind)
			}
			if c.Down > 0 {
				line += ", away " + span(c.Down)
			}
		}
		if sv := g.Server; sv != nil && sv.namesBroker() {
			line += "; own server"
		}
		if sv := g.Server; sv != nil && sv.hasCredentials() {
			line += "; own user " + strconv.Quote(termtext.Line(sv.Username)) // the password is not shown
		}
		if g.CredentialsFile != "" {
			line += "; logins from " + strconv.Quote(termtext.Line(g.CredentialsFile)) // the file, never its contents
		}
		if g.given&cgGivenReconnect != 0 {
			line += "; reconnect " + string(g.Reconnect)
		}
		fmt.Fprintln(w, line)
	}
}

// clients says "1 client" or "n clients".
func clients(n int) string {
	if n == 1 {
		return "1 client"
	}
	return strconv.Itoa(n) + " clients"
}
