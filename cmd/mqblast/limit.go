package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/mqblast/mqblast/run/spec"
)

func newLimitCmd() *cobra.Command {
	var (
		lim     spec.Limit
		confirm bool
		f       runFlags
	)
	cmd := &cobra.Command{
		Use:   "limit SCENARIO --slo EXPR [--slo EXPR ...] [flags]",
		Short: "Find the highest publish (or connect) rate a broker sustains within an SLO, and who set the limit",
		Long: `Find a broker's limit: connect the scenario's clients once, then step the offered publish
rate up geometrically (--factor) from --start-rate until a step fails its SLO, then bisect
between the last step that held and the first that failed until they are --precision apart.
Each step holds its rate for --step, is judged after --settle, and is followed by --pause
in which nothing is due, so that what was in flight arrives and the step's losses are its
own. Rates are totals: messages per second offered by every publisher together (the
per-publisher rate is printed beside them: --set parameters.publish_rate=<it> redoes a step
as a plain run).

An SLO is a threshold expression over a step's summary: latency_us.p99<50000,
messages.lost==0, messages.unsent_total==0, throughput.receive_per_s>=45000,
client.saturated==0 (the paths of a stage's summary in the result). A step also fails
when the broker stalls (it held the publishers: flow control, a socket it did not read,
dropped connections), since an overloaded broker can meet a latency SLO by not reading.

A Connections scenario's connect rate is searched with --vary parameters.connection_rate:
each step dials clients not connected before at its rate (connections per second of the
whole run), and is judged by its connect figures (connect_latency_us.p99,
connections.failed, connections.connect_per_s) and whether its rate was established. Every
step takes new clients, so the scenario's client_count bounds the search: when the next
step needs more than are left it ends, and says that no limit was found if none failed.

The answer says who set the limit, from the first failed step's evidence: the client
(schedule lag, CPU), the host (kernel findings, steal) or the broker (stalls, its CPU with
--broker-pid or --broker-metrics). When the client or the host set it, the figure is a
lower bound for the broker, and the output says so with the fix. The search runs in one
process (--procs 1) and ends at --max-rate or --max-duration; Ctrl-C gives what is known.
Its result's spec holds the search ("limit"): 'mqblast run --spec' repeats it.
Exit 0 when a limit was found, 5 when even the start rate fails the SLO, 1 when the run
failed, 2 on bad input.`,
		Example: `  mqblast limit quick-p2p-100 --broker 127.0.0.1:1883 --slo 'latency_us.p99<50000' --slo messages.lost==0
  mqblast limit p2p.json --sink --slo 'latency_us.p99<20000' --start-rate 10000 --max-rate 2000000 --html limit.html
  mqblast limit quick-p2p-100 --broker 10.0.0.5:1883 --broker-metrics http://10.0.0.5:9100/metrics --slo 'latency_us.p99<50000'
  mqblast limit quick-conn-100 --broker 10.0.0.5:1883 --set publishers.client_count=15000 --vary parameters.connection_rate \
    --slo 'connect_latency_us.p99<100000' --slo connections.failed==0 --start-rate 500 --step 2s --settle 1s`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError(fmt.Errorf("limit takes one scenario (a file or a built-in name), got %d arguments", len(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			sp, err := f.spec(cmd, args[0])
			if err != nil {
				return err
			}
			l := lim
			l.Confirm = &confirm
			sp.Limit = &l
			return start(cmd, sp, f.password)
		},
	}
	f.register(cmd)
	fl := cmd.Flags()
	_ = fl.Set("procs", "1")
	fl.Lookup("procs").DefValue = "1"
	fl.StringArrayVar(&lim.SLO, "slo", nil, "what a step must hold: a threshold expression over its summary (repeatable), e.g. 'latency_us.p99<50000', messages.lost==0")
	fl.Float64Var(&lim.StartRate, "start-rate", 0, "the first step's rate, messages per second of all publishers together, or connections per second (default: the scenario's, publish_rate × publishers or connection_rate)")
	fl.Float64Var(&lim.MaxRate, "max-rate", 0, "the highest rate tried (default: 1000 × the start rate)")
	fl.Float64Var(&lim.Precision, "precision", 0.05, "stop when the first failed rate is within this fraction above the sustained one")
	fl.Float64Var(&lim.Factor, "factor", 2, "the step up from one rate to the next until a step fails")
	fl.DurationVar((*time.Duration)(&lim.Step), "step", 10*time.Second, "how long each rate is held (whole seconds)")
	fl.DurationVar((*time.Duration)(&lim.Settle), "settle", 3*time.Second, "how much of each step's start is not judged")
	fl.DurationVar((*time.Duration)(&lim.Pause), "pause", 2*time.Second, "how long nothing is due after each step, so that its copies in flight arrive (whole seconds)")
	fl.DurationVar((*time.Duration)(&lim.MaxDuration), "max-duration", 10*time.Minute, "the longest the search publishes")
	fl.BoolVar(&confirm, "confirm", true, "repeat a failed step once at the same rate and go by the repeat, and hold the answer once more before giving it (a step spoilt by the host, or one that held in a quiet moment, does not make the answer)")
	fl.StringVar(&lim.Vary, "vary", spec.VaryPublishRate, "the rate field varied: "+spec.VaryPublishRate+", or "+spec.VaryConnectionRate+" for a Connections scenario")
	return cmd
}
