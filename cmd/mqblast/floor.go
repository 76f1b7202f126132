package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/mqblast/mqblast/bench"
	"github.com/mqblast/mqblast/internal/floor"
	"github.com/mqblast/mqblast/scenario"
)

func init() { register(newFloorCmd) }

// floorDrain bounds the floor's drain: its CPU counts only in the window, so the drain
// only lets the last messages arrive before the sockets close.
const floorDrain = 500 * time.Millisecond

// newFloorCmd is the hidden `mqblast floor`: the per-message floor of make bench-floor
// (internal/floor). It takes a scenario and the overrides `run` takes, so that both run
// the same plan.
func newFloorCmd() *cobra.Command {
	var rf runFlags
	cmd := &cobra.Command{
		Use:   "floor SCENARIO --broker HOST:PORT [flags]",
		Short: "Instrument: the raw-socket per-message floor of a messaging scenario (make bench-floor)",
		Long: `Run a messaging scenario's clients as a minimal raw-socket client that makes the reads
and writes 'mqblast run' makes for it (same loops, wakes, batching and system calls) with
no MQTT state and no measurement, and print one JSON document: the process's CPU time over
the measure window per PUBLISH read in it (cpu_per_received_us). It is the floor that
make bench-floor holds 'mqblast run' against; see internal/floor. 3.1.1 and 5.0, TCP only,
no %rand_N topics; connecting is blocking and not part of the figure.`,
		Example: `  mqblast floor quick-p2p-100 --broker 127.0.0.1:1883 --set publishers.qos=0 --duration 10s`,
		Hidden:  true,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError(fmt.Errorf("floor takes one scenario (a file or a built-in name), got %d arguments", len(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := scenario.Resolve(args[0])
			if err != nil {
				return withCode(exitInvalid, err)
			}
			if err := applyOverrides(s, &rf); err != nil {
				return err
			}
			plan, err := scenario.NewPlan(s)
			if err != nil {
				return withCode(exitInvalid, err)
			}
			if len(plan.Brokers()) == 0 {
				return usageError(errors.New("floor needs a broker: give --broker HOST:PORT (it starts none)"))
			}
			run, err := bench.NewRunner(plan, nil, 0)
			if err != nil {
				return withCode(exitInvalid, err)
			}
			if !run.Messaging {
				return withCode(exitInvalid, fmt.Errorf("scenario %q has no messages: the floor is for messaging scenarios", s.Name))
			}
			run.Engine.Loops = rf.loops
			res, err := floor.Run(cmd.Context(), floor.Config{Engine: run.Engine,
				Warmup: run.Warmup, Duration: run.Duration, Drain: min(run.Drain, floorDrain)})
			if res != nil {
				if rf.out != "" {
					b, _ := json.MarshalIndent(res, "", "  ")
					if werr := os.WriteFile(rf.out, append(b, '\n'), 0o644); werr != nil {
						return fmt.Errorf("cannot write %s: %w", rf.out, werr)
					}
				}
				enc := json.NewEncoder(cmd.OutOrStdout())
				if eerr := enc.Encode(res); eerr != nil {
					return eerr
				}
			}
			if errors.Is(err, context.Canceled) {
				return withCode(exitInterrupted, err)
			}
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&rf.brokers, "broker", nil, "broker host:port (numeric), replacing the scenario's server")
	fl.StringArrayVar(&rf.sets, "set", nil, "override a scenario field: path=value (repeatable), as for run")
	fl.StringSliceVar(&rf.bind, "bind", nil, "source addresses, as for run")
	fl.DurationVar(&rf.duration, "duration", 0, "override parameters.duration_sec")
	fl.IntVar(&rf.loops, "loops", 0, "event loops (0: one per core, as run)")
	fl.StringVar(&rf.out, "out", "", "also write the JSON document to this file")
	return cmd
}
