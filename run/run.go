package run

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mqblast/mqblast/bench"
	"github.com/mqblast/mqblast/reactor"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/run/spec"
	"github.com/mqblast/mqblast/scenario"
	"github.com/mqblast/mqblast/sink"
	"github.com/mqblast/mqblast/watch"
)

// options are the settings of a run besides its plan.
type options struct {
	// Procs is the number of processes to run the plan in (chooseProcs); more than one
	// starts worker processes, each with a shard of the plan.
	Procs int
	// Loops is the event loops per process (0: one per core; with workers, a share of the
	// cores each).
	Loops int
	// IDStart numbers client ids from this instead of 0.
	IDStart int
	// MaxPacket is the largest packet a client accepts (0: the engine's default).
	MaxPacket int
	// AcceptDowngrade runs a plan the broker says it cannot serve at what it grants
	// (bench.Runner.AcceptDowngrade).
	AcceptDowngrade bool
	// TLS is for brokers given as mqtts:// or wss:// URLs.
	TLS spec.TLS
	// Sink starts mqblast sink on loopback in a child process and runs against it (a
	// calibration run); SinkFlushDelay is its --flush-delay.
	Sink           bool
	SinkFlushDelay time.Duration
	// SinkTLS has the sink speak mqtts with a certificate made for the run, which the
	// clients trust (and no other CA).
	SinkTLS bool
	// SinkWS has the sink speak MQTT over WebSocket (ws, or with SinkTLS wss).
	SinkWS bool
	// BrokerPID and BrokerCgroup name the broker process or cgroup to sample (0, "": found
	// when the broker is local).
	BrokerPID    int
	BrokerCgroup string
	// BrokerMetrics are the broker host's Prometheus endpoints (--broker-metrics), scraped
	// once per interval; Metrics their settings.
	BrokerMetrics []string
	Metrics       metricsOptions
	// BrokerSys reads the broker's $SYS topics on a connection of its own, not counted in
	// the run's figures, into the result's broker_sys.
	BrokerSys bool
	// Start, if set, is when publishing starts (--start-at).
	Start *startAt
	// Shard, if set, is the shard of the scenario this run is, for the result.
	Shard *result.ShardInfo
	// Run is the run's identity (resolveRunID), shared by its shards and workers: every
	// measured header carries its tag, and copies of other runs are unexpected other_run.
	// A plan that does not know its publishers (Subscribe) filters them only when the
	// identity was given (--run-id), since its publishers cannot share one otherwise.
	// Nil: one is drawn.
	Run *result.RunInfo
	// Checks are the host checks' findings (checkHost), for the result's host.checks.
	Checks json.RawMessage
	// Network is the network profile the run goes through, for its result (Net's, or
	// EmulatedProfile's inside the emulator's client namespace).
	Network *result.NetworkInfo
	// ToolVersion is mqblast's version, for the result.
	ToolVersion string
	// Log takes progress and notices (a terminal's stderr).
	Log io.Writer
	// OnInterval, if set, receives every interval's snapshot (merged over the workers).
	OnInterval func(result.Interval, *result.Snapshot)
	// OnStep is told when a limit search's step starts: its index and rate (nil: nobody).
	OnStep func(index int, rate float64)

	// control, if set, is the live page's view of the run's stages and, when steerable,
	// the live API's steering of its rate; steerable tells a worker process that its
	// parent steers it.
	control   *runControl
	steerable bool
	// tune, if set, changes the runner of a run in this process before it runs (Limit's
	// search).
	tune func(r *bench.Runner)
	// exe is the mqblast binary of the child processes ("": this one); getenv reads the
	// environment.
	exe    string
	getenv func(string) string
}

// execute runs plan as o says and returns its result, with the error of a run that failed
// or was interrupted (bench.ErrInterrupted) beside a partial result. A nil result comes with
// the error that prevented the run.
func execute(ctx context.Context, plan *scenario.Plan, o options) (*result.Result, error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	o.Start.announce(o.Log, plan, time.Now())
	if o.Run == nil {
		var err error
		if o.Run, err = resolveRunID("", nil); err != nil {
			return nil, err
		}
	}
	brokers := plan.Brokers()
	embeddedPID := 0
	var sinkCA *x509.CertPool
	if o.Sink {
		start := sink.StartChild
		if o.SinkTLS {
			start = sink.StartChildTLS
		}
		if o.SinkWS {
			start = func(exe string, d time.Duration, n int) (*sink.Child, error) {
				return sink.StartChildWS(exe, d, n, o.SinkTLS)
			}
		}
		sc, err := start(o.exe, o.SinkFlushDelay, plan.Len())
		if err != nil {
			return nil, err
		}
		defer sc.Stop()
		how := "a child process"
		switch {
		case sc.WS && sc.TLS != nil:
			how = "wss (WebSocket over TLS 1.3, a certificate made for this run) in a child process"
		case sc.WS:
			how = "ws (WebSocket) in a child process"
		case sc.TLS != nil:
			how = "mqtts (TLS 1.3, a certificate made for this run) in a child process"
		}
		if sc.Procs {
			how = strings.Replace(how, "a child process", "child processes (--procs auto: relaying only within each)", 1)
		}
		fmt.Fprintf(o.Log, "--sink: started mqblast sink on %s in %s: a calibration run, "+
			"it measures this client host's own ceiling (the sink shares its CPU), not a broker\n", sc.Addr, how)
		brokers, embeddedPID = []string{sc.Broker()}, sc.Pid()
		if sc.TLS != nil {
			sinkCA = sc.TLS.Pool
		}
	} else if len(brokers) == 0 {
		b, err := startEmbeddedBroker(o.Log, o.exe)
		if err != nil {
			return nil, err
		}
		defer b.Close()
		brokers, embeddedPID = []string{b.Addr}, b.Pid()
	}
	tlsConf, err := tlsConfig(tlsOptions(o.TLS), brokers)
	if err == nil && sinkCA != nil {
		tlsConf.RootCAs = sinkCA // the sink's certificate was made for this run
	}
	if err != nil {
		return nil, err
	}
	if err := checkRecordLayer(o.TLS); err != nil {
		return nil, err
	}
	if tlsConf == nil && len(plan.Scenario().CertSources()) > 0 {
		return nil, usage(spec.Errorf("brokers", "the scenario's server gives a TLS client certificate (cert, key, client_ca), "+
			"which needs a TLS broker: give {brokers} mqtts://HOST:8883 or wss://HOST:8084/mqtt"))
	}
	watch, err := newWatch(ctx, o.Log, &o, brokers, embeddedPID)
	if err != nil {
		return nil, err
	}
	if err := readBrokerSys(ctx, watch, &o, plan, brokers, tlsConf); err != nil {
		return nil, err
	}
	defer watch.Close()
	var res *result.Result
	if o.Procs > 1 {
		res, err = runWorkers(ctx, plan, &o, brokers, watch)
	} else {
		res, err = runHere(ctx, plan, &o, brokers, tlsConf, watch)
	}
	if res == nil {
		return nil, err
	}
	res.Shard = o.Shard
	res.Run = o.Run
	if o.Shard == nil {
		res.Join = nil // a whole run: nothing crosses it
	}
	res.Start = o.Start.info()
	if o.Sink {
		res.BrokerKind, res.Calibration = "sink", true
	}
	if o.Network != nil {
		res.Network = o.Network
	}
	if res.Host.Checks == nil {
		res.Host.Checks = o.Checks
	}
	return res, err
}

// runHere runs plan in this process.
func runHere(ctx context.Context, plan *scenario.Plan, o *options, brokers []string, tlsConf *tls.Config, watch *watch.Watch) (*result.Result, error) {
	r, err := newRunner(plan, brokers, o, tlsConf)
	if err != nil {
		return nil, err
	}
	r.Progress, r.Watch, r.OnInterval = o.Log, watch, o.OnInterval
	if o.tune != nil {
		o.tune(r)
	} else if o.control != nil {
		if r.Steerable = o.steerable && r.BaseRate > 0; r.Steerable || !o.steerable {
			o.control.attach(runnerTarget{r}, "") // without the API: its stages, for the page
		} else {
			o.control.attach(nil, notSteerable)
		}
	}
	if st := o.Start; st != nil {
		r.StartGate = func() (time.Time, error) { return st.ready(o.Log), nil }
	}
	fmt.Fprintf(o.Log, "connecting %d clients to %s at %.0f/s\n", r.Engine.Clients,
		strings.Join(r.Engine.Brokers, ","), r.Engine.ConnectRate)
	res, err := r.Run(ctx)
	if res == nil && errors.Is(err, reactor.ErrAddrCapacity) {
		return nil, kind(errNotReady, err)
	}
	return res, err
}

// newRunner builds the runner of plan against brokers with o's engine settings: the one
// place a runner is made, for a run in this process and for a worker's shard.
func newRunner(plan *scenario.Plan, brokers []string, o *options, tlsConf *tls.Config) (*bench.Runner, error) {
	r, err := bench.NewRunner(plan, brokers, o.IDStart)
	if err != nil {
		return nil, kind(errInvalid, err)
	}
	r.Engine.TLS = tlsConf
	r.Engine.TLSRecordLayer = o.TLS.RecordLayer
	r.Engine.Loops = o.Loops
	r.Engine.MaxInbound = cmp.Or(o.MaxPacket, r.Engine.MaxInbound)
	r.AcceptDowngrade = o.AcceptDowngrade
	if o.Run != nil {
		r.Engine.RunTag = o.Run.Tag
		r.AnyRun = r.Stream == nil && o.Run.From != runIDGiven
	}
	r.ToolVersion, r.Scenario = o.ToolVersion, effectiveJSON(plan.Scenario())
	return r, nil
}

// effectiveJSON is the scenario as run, for the result document.
func effectiveJSON(s *scenario.Scenario) []byte {
	b, err := json.Marshal(s)
	if err != nil {
		return nil
	}
	return b
}
