package run

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mqblast/mqblast/internal/brokersys"
	"github.com/mqblast/mqblast/internal/termtext"
	"github.com/mqblast/mqblast/reactor"
	"github.com/mqblast/mqblast/run/spec"
	"github.com/mqblast/mqblast/scenario"
	"github.com/mqblast/mqblast/tuning"
	"github.com/mqblast/mqblast/tuning/exporter"
	"github.com/mqblast/mqblast/watch"
)

// newWatch returns the watch of the host and the broker for a run against brokers:
// the broker's pid is embeddedPID (the embedded broker), o.BrokerPID, or the local
// process listening on the broker's port when the broker address is this host's (a search
// bounded in time and memory, which ctx's end stops).
func newWatch(ctx context.Context, w io.Writer, o *options, brokers []string, embeddedPID int) (*watch.Watch, error) {
	pid := embeddedPID
	switch {
	case o.BrokerPID > 0:
		if _, err := tuning.ReadProcess(o.BrokerPID); err != nil {
			return nil, usage(spec.Errorf("watch.broker_pid", "{watch.broker_pid} %d: is it running on this host? %v", o.BrokerPID, err))
		}
		pid = o.BrokerPID
	case pid == 0 && len(brokers) == 1:
		if port, ok := localPort(brokers[0]); ok {
			l, err := tuning.FindListeners(ctx, port)
			switch ps := l.PIDs; {
			case errors.Is(err, context.DeadlineExceeded):
				fmt.Fprintf(w, "broker process: not sampled: %v; pass --broker-pid PID to sample it\n", err)
			case err != nil:
			case len(ps) == 1:
				pid = ps[0]
				fmt.Fprintf(w, "broker process: pid %d (%s) listens on port %d; its CPU and memory are sampled (--broker-pid to choose)\n",
					pid, processName(pid), port)
			default: // one process's figures are not the broker's
				fmt.Fprintf(w, "broker process: %d processes listen on port %d (pids %v, %s): not sampled, since one would "+
					"stand for all; --broker-cgroup samples them together, --broker-pid one of them\n", len(ps), port, ps[:min(len(ps), 4)], processName(ps[0]))
			}
		}
	}
	if o.BrokerCgroup != "" {
		if _, err := tuning.ReadCgroup("/sys/fs/cgroup", o.BrokerCgroup); err != nil {
			return nil, usage(spec.Errorf("watch.broker_cgroup", "{watch.broker_cgroup} %s: %v", o.BrokerCgroup, err))
		}
	}
	s, err := newScraper(w, o)
	if err != nil {
		return nil, err
	}
	wt := watch.New(pid, o.BrokerCgroup)
	wt.SetRemote(s)
	return wt, nil
}

// readBrokerSys starts the reader of the broker's $SYS topics (--broker-sys) and gives it
// to watch: one connection to the first of brokers, logged in as the plan's clients are,
// over TLS for an mqtts:// broker. A broker that cannot be read is a usage error, before
// the run's first socket.
func readBrokerSys(ctx context.Context, watch *watch.Watch, o *options, plan *scenario.Plan, brokers []string, tlsConf *tls.Config) error {
	if !o.BrokerSys {
		return nil
	}
	b := brokers[0]
	scheme, host, port, _, err := reactor.ParseBroker(b)
	if err != nil {
		return usage(spec.Errorf("watch.broker_sys", "{watch.broker_sys}: %v", err))
	}
	bo := brokersys.Options{Addr: net.JoinHostPort(host, strconv.Itoa(port))}
	switch scheme {
	case "ws", "wss":
		return usage(spec.Errorf("watch.broker_sys", "{watch.broker_sys} reads $SYS over MQTT on TCP or TLS, not over WebSocket (%s): leave out {watch.broker_sys}", termtext.Line(b)))
	case "mqtts":
		bo.TLS = tlsConf
	}
	s := plan.Scenario()
	bo.Username, bo.Password = s.Server.Username, s.Server.Password
	rd, err := brokersys.Start(ctx, bo)
	if err != nil {
		return usage(spec.Errorf("watch.broker_sys", "{watch.broker_sys}: %v", err))
	}
	qos2 := false
	for _, g := range plan.GroupSettings() {
		qos2 = qos2 || g.QoS == 2
	}
	watch.ReadBrokerSys(rd, qos2)
	r := rd.Snapshot()
	if len(brokers) > 1 {
		fmt.Fprintf(o.Log, "broker $SYS: reading %s's only (the first of %d brokers)\n", bo.Addr, len(brokers))
	}
	if r.Read == 0 {
		fmt.Fprintf(o.Log, "broker $SYS: %s has sent no $SYS topic yet (connection not counted in the run)\n", bo.Addr)
		return nil
	}
	ver := r.Version
	if ver == "" {
		ver = "version not published"
	}
	fmt.Fprintf(o.Log, "broker $SYS: reading %d topics from %s (%s; connection not counted in the run)\n", len(r.Topics), bo.Addr, ver)
	watch.WaitSysRefresh(o.Log)
	return nil
}

// localPort returns the port of a host:port whose host is an address of this host.
func localPort(hostport string) (int, bool) {
	_, host, port, _, err := reactor.ParseBroker(hostport) // host:port or a broker URL
	if err != nil {
		return 0, false
	}
	if host == "localhost" {
		return port, true
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return 0, false
	}
	if a.IsLoopback() || a.IsUnspecified() {
		return port, true
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return 0, false
	}
	for _, x := range addrs {
		if ipn, ok := x.(*net.IPNet); ok {
			if b, ok := netip.AddrFromSlice(ipn.IP); ok && b.Unmap() == a.Unmap() {
				return port, true
			}
		}
	}
	return 0, false
}

// processName returns the command name of pid, or "?".
func processName(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return "?"
	}
	return termtext.Line(strings.TrimSpace(string(b))) // any process may name itself anything
}

// metricsOptions are the settings of the broker host's endpoints (--broker-metrics).
type metricsOptions struct {
	// Series are the other series to record (--broker-metric NAME{labels}).
	Series []string
	// AuthFile holds the scrape's credentials (--broker-metrics-auth); without it they
	// come from the environment (exporter.LoadAuth).
	AuthFile string
	// Process is the process-exporter group that is the broker ("": found).
	Process string
	// Timeout bounds one scrape (0: 800ms); it must be shorter than the interval.
	Timeout time.Duration
}

// newScraper returns the scraper of o.BrokerMetrics (nil without), after a first scrape of
// each: an endpoint that does not answer with Prometheus text before the run is a usage
// error that names it, before the first socket of the run.
func newScraper(w io.Writer, o *options) (*exporter.Scraper, error) {
	m := &o.Metrics
	if len(o.BrokerMetrics) == 0 {
		return nil, nil
	}
	auth, err := exporter.LoadAuth(m.AuthFile, o.getenv)
	if err != nil {
		return nil, usage(spec.Errorf("watch.broker_metrics_auth", "{watch.broker_metrics_auth}: %v", err))
	}
	s, err := exporter.New(o.BrokerMetrics, exporter.Options{Timeout: m.Timeout, Auth: auth, Series: m.Series, Process: m.Process})
	if err != nil {
		return nil, usage(spec.Errorf("watch.broker_metrics", "%v", err))
	}
	rd := s.Scrape(context.Background())
	for _, t := range rd.Targets {
		if t.Err != "" {
			return nil, usage(spec.Errorf("watch.broker_metrics", "{watch.broker_metrics} %s: %s", termtext.Line(t.URL), termtext.Line(t.Err)))
		}
		what := "no series mqblast knows (only --broker-metric series are recorded)"
		if len(t.Kinds) > 0 {
			what = strings.Join(t.Kinds, ", ")
		}
		fmt.Fprintf(w, "broker metrics: %s: %d metric families, %s; scraped once per interval\n", termtext.Line(t.URL), t.Families, what)
	}
	for _, spec := range m.Series {
		if _, ok := rd.Series[spec]; !ok {
			fmt.Fprintf(w, "broker metrics: --broker-metric %s: no such series at the endpoints yet; recorded when it appears\n", termtext.Line(spec))
		}
	}
	return s, nil
}
