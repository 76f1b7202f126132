package run

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/fail"
	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/run/spec"
	"github.com/mqblast/mqblast/tuning"
)

// TestLimitFindBadInput: an SLO that names a figure the kind of search does not produce,
// a --find that is none of the three, --find and --vary that disagree, and a connection
// count beyond what this process may hold are each one usage error naming its field,
// before any socket (nothing listens on the broker's address).
func TestLimitFindBadInput(t *testing.T) {
	t.Parallel()
	lim, err := tuning.ProcessNoFile()
	if err != nil || lim.Hard == 0 || lim.Hard > 1<<20 {
		t.Skipf("RLIMIT_NOFILE %d (%v): a plan beyond it is too large to build here", lim.Hard, err)
	}
	beyond := "publishers.client_count=" + number(float64(lim.Hard+100))
	for _, c := range []struct {
		name, scenario string
		sets           []string
		limit          spec.Limit
		want           string
	}{
		{"latency of a count", "quick-conn-100", nil, spec.Limit{SLO: []string{"latency_us.p99<5000"}, Find: spec.FindConnections},
			"limit.slo latency_us.p99<5000: a connections search has no messages"},
		{"losses of a connect rate", "quick-conn-100", nil, spec.Limit{SLO: []string{"messages.lost==0"}, Find: spec.FindConnectRate},
			"a connect-rate search has no messages"},
		{"connects of a publish rate", "quick-p2p-100", nil, spec.Limit{SLO: []string{"connect_latency_us.p99<5000"}},
			"a publish-rate search has no connects"},
		{"find", "quick-conn-100", nil, spec.Limit{SLO: []string{"connections.failed==0"}, Find: "sessions"},
			"limit.find sessions: want publish-rate, connect-rate or connections"},
		{"find and vary", "quick-conn-100", nil, spec.Limit{SLO: []string{"connections.failed==0"}, Find: spec.FindConnections, Vary: spec.VaryConnectionRate},
			"say different things"},
		{"beyond the client", "quick-conn-100", []string{beyond, "parameters.connection_rate=100"},
			spec.Limit{SLO: []string{"connections.failed==0"}, Find: spec.FindConnections}, "more than this process may hold: RLIMIT_NOFILE"},
		{"count above clients", "quick-conn-100", []string{"parameters.connection_rate=100"},
			spec.Limit{SLO: []string{"connections.failed==0"}, Find: spec.FindConnections, MaxRate: 500}, "the scenario has 100 clients"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			sp := quick(c.scenario, "127.0.0.1:9", c.sets...)
			sp.NoCheck, sp.Limit = true, &c.limit
			r := doSpec(t, sp)
			if !errors.Is(r.err, fail.ErrUsage) || !strings.Contains(r.err.Error(), c.want) || strings.Contains(r.stderr, "connecting") {
				t.Errorf("%v, want %v with %q before connecting:\n%s", r.err, fail.ErrUsage, c.want, r.stderr)
			}
		})
	}
}

// TestLimitConnections: a connection-count search against Mosquitto whose descriptor limit
// is 300 (the client's is far higher) grows the connections held 100, 200, 400 without
// closing any; at 400 the broker resets what it cannot accept, the repeat dials the missing
// ones again and fails the same way, and the answer is 200 held, 400 failed with the
// broker's count in between, limited by the broker (its refusals named), with what each
// connection cost its resident set from its pid.
func TestLimitConnections(t *testing.T) {
	m := testbroker.StartMosquitto(t, testbroker.Options{NoFile: 300})
	sp := quick("quick-conn-100", m.Addr, "publishers.client_count=600", "parameters.connection_rate=500")
	sp.Outputs.HTML, sp.Watch.BrokerPID = filepath.Join(t.TempDir(), "limit.html"), m.Cmd.Process.Pid
	sp.Limit = &spec.Limit{SLO: []string{"connect_latency_us.p99<500000", "connections.failed==0", "broker.cpu_percent<95"}, Find: spec.FindConnections,
		StartRate: 100, MaxDuration: spec.Duration(60 * time.Second)}
	res, output := limitRun(t, sp)
	l := res.Limit
	for i, st := range l.Steps {
		t.Logf("step %d: %.0f asked, %d held, failed %d, rss %.0f, ok %v %v", i+1, st.Rate, st.Held, st.Connections.Failed,
			st.BrokerRSSBytes, st.OK, st.Failed)
	}
	if l.Kind != result.KindConnections || l.Unit() != "connections" || !l.Found || l.Sustained != 200 || l.FirstFailed != 400 ||
		l.Ended != "first_failure" || len(l.Steps) != 4 {
		t.Fatalf("limit %+v: want 100 and 200 held, 400 failed twice\n%s", l, output)
	}
	for i, st := range l.Steps {
		if st.Held < int64(min(st.Rate, 250)) || st.Held >= 300 {
			t.Errorf("step %d held %d of %.0f: want the count, or what 300 descriptors hold", i+1, st.Held, st.Rate)
		}
		if b := st.Broker; b == nil || b.RSSBytes < 1<<20 || len(st.Thresholds) != 3 || !st.Thresholds[2].OK {
			t.Errorf("step %d: broker %+v, thresholds %+v: want its pid's figures, and its CPU judged", i+1, b, st.Thresholds)
		}
		if i > 0 && st.Held < l.Steps[i-1].Held {
			t.Errorf("step %d held %d, fewer than step %d's %d: the population was torn down", i+1, st.Held, i, l.Steps[i-1].Held)
		}
	}
	if l.LimitedBy != "broker" || l.LowerBound || !strings.Contains(strings.Join(l.Evidence, "; "), "the broker held 2") ||
		!strings.Contains(l.Fix, "descriptor limit") {
		t.Errorf("limited by %q (lower bound %v), evidence %q, fix %q: want the broker's refusals named", l.LimitedBy, l.LowerBound, l.Evidence, l.Fix)
	}
	if c := res.Connections; c.Failed == 0 || c.FailedBy["fd_limit"] != 0 {
		t.Errorf("connections failed %d by %v: want the broker's refusals, none for the client's descriptors", c.Failed, c.FailedBy)
	}
	if b := l.BrokerRSSPerConnBytes; b <= 0 || b > 1<<20 {
		t.Errorf("broker RSS per connection %.0f bytes: want a cost from its pid's resident set", b)
	}
	if !strings.Contains(output, "each connection held cost the broker") || !strings.Contains(output, "400 connections asked, 2") {
		t.Errorf("the text does not give the cost per connection or the steps' counts:\n%s", output)
	}
	if b, err := os.ReadFile(sp.Outputs.HTML); err != nil || !strings.Contains(string(b), "Limit search: connections (connections)") ||
		!strings.Contains(string(b), "Held against asked") {
		t.Errorf("the HTML report's limit panel does not show the count search (%v)", err)
	}
}
