package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/mqblast/mqblast/result"
)

// TestSummaryPerConnectionFigures: the summary shows RSS per connection (broker and client)
// and CPU per connect only from minConnsPerConnection established connections on; below,
// the broker and client lines keep their totals.
func TestSummaryPerConnectionFigures(t *testing.T) {
	for _, tc := range []struct {
		name        string
		established int64
		messaging   bool
		want        []string // substrings of the summary, fields one space apart
		notWant     []string
	}{
		{name: "connections 1000", established: 1000,
			want: []string{"rss 18.0 MiB (peak 18.0 MiB), 110 fds, 43622 B rss per connection",
				"client cpu 0.19s (929.7 µs per connect), max rss 17.0 MiB, 5652 B rss per connection"}},
		{name: "connections 100", established: 100,
			want:    []string{"rss 18.0 MiB (peak 18.0 MiB), 110 fds\n", "client cpu 0.19s, max rss 17.0 MiB\n"},
			notWant: []string{"per connection", "per connect"}},
		{name: "messaging 200", established: 200, messaging: true,
			want:    []string{"rss 18.0 MiB (peak 18.0 MiB), 110 fds\n", "client cpu 0.19s, max rss 17.0 MiB\n"},
			notWant: []string{"per connection", "per connect"}},
		{name: "messaging 2000", established: 2000, messaging: true,
			want:    []string{"110 fds, 43622 B rss per connection", "client cpu 0.19s, max rss 17.0 MiB\n"},
			notWant: []string{"per connect)", "5652 B"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &result.Result{Schema: result.Schema}
			r.Connections.Target = int(tc.established)
			r.Connections.Established = tc.established
			if tc.messaging {
				r.Messages.Scheduled, r.Messages.Published, r.Messages.Received = 10, 10, 10
			}
			r.BrokerProcess = &result.BrokerProcess{PID: 7, CPUS: 0.08, RSSBytes: 18 << 20, RSSPeakBytes: 18 << 20, FDs: 110,
				RSSPerConnectionBytes: 43622}
			r.Client.CPUS, r.Client.CPUPerConnectUS = 0.19, 929.7
			r.Client.MaxRSSBytes, r.Client.RSSPerConnectionBytes = 17<<20, 5652
			var buf bytes.Buffer
			if err := WriteSummary(&buf, r); err != nil {
				t.Fatal(err)
			}
			var out string // one space between fields, as the tabwriter's padding varies
			for _, l := range strings.SplitAfter(buf.String(), "\n") {
				out += strings.Join(strings.Fields(l), " ") + "\n"
			}
			for _, s := range tc.want {
				if !strings.Contains(out, s) {
					t.Errorf("summary lacks %q:\n%s", s, out)
				}
			}
			for _, s := range tc.notWant {
				if strings.Contains(out, s) {
					t.Errorf("summary has %q:\n%s", s, out)
				}
			}
		})
	}
}
