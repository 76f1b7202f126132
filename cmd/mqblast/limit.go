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
		Use:     "limit SCENARIO --slo EXPR [--slo EXPR ...] [flags]",
		Short:   "Find the highest publish rate, connect rate or connection count a broker sustains within an SLO, and who set the limit",
		Long:    helpText("limit"),
		Example: examples("limit"),
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
			if !cmd.Flags().Changed("vary") {
				l.Vary = "" // --find alone says what is searched
			}
			l.Confirm = &confirm
			sp.Limit = &l
			return start(cmd, sp, f.passwords())
		},
	}
	f.register(cmd)
	fl := cmd.Flags()
	_ = fl.Set("procs", "1")
	fl.Lookup("procs").DefValue = "1"
	fl.StringArrayVar(&lim.SLO, "slo", nil, "what a step must hold: a threshold expression over its summary (repeatable), e.g. 'latency_us.p99<50000', messages.lost==0")
	fl.Float64Var(&lim.StartRate, "start-rate", 0, "the first step's rate, messages per second of all publishers together, or connections per second (default: the scenario's, publish_rate × publishers or connection_rate)")
	fl.Float64Var(&lim.MaxRate, "max-rate", 0, "the highest rate tried (default: 1000 × the start rate, at most 1,000,000 msg/s per publisher)")
	fl.Float64Var(&lim.Precision, "precision", 0.05, "stop when the first failed rate is within this fraction above the sustained one")
	fl.Float64Var(&lim.Factor, "factor", 2, "the step up from one rate to the next until a step fails")
	fl.DurationVar((*time.Duration)(&lim.Step), "step", 10*time.Second, "how long each rate is held (whole seconds)")
	fl.DurationVar((*time.Duration)(&lim.Settle), "settle", 3*time.Second, "how much of each step's start is not judged")
	fl.DurationVar((*time.Duration)(&lim.Pause), "pause", 2*time.Second, "how long nothing is due after each step, so that its copies in flight arrive (whole seconds)")
	fl.DurationVar((*time.Duration)(&lim.MaxDuration), "max-duration", 10*time.Minute, "the longest the search publishes")
	fl.BoolVar(&confirm, "confirm", true, "repeat a failed step once at the same rate and go by the repeat, and hold the answer once more before giving it (a step spoilt by the host, or one that held in a quiet moment, does not make the answer)")
	fl.StringVar(&lim.Find, "find", "", "what the search finds: "+spec.FindPublishRate+" (the default), "+spec.FindConnectRate+
		" (connections per second, a Connections scenario) or "+spec.FindConnections+" (how many connections the broker holds; --start-rate and --max-rate are counts)")
	fl.Lookup("find").DefValue = spec.FindPublishRate
	fl.StringVar(&lim.Vary, "vary", spec.VaryPublishRate, "the rate field varied: "+spec.VaryPublishRate+", or "+spec.VaryConnectionRate+" for a Connections scenario (as --find "+spec.FindConnectRate+")")
	return cmd
}
