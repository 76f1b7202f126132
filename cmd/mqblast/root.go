package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"

	"github.com/spf13/cobra"
)

// Build information, set by `make build` through -ldflags -X.
var (
	version = "dev"
	commit  = "none"
	date    = "unknown"
)

// commands are mqblast's verbs, in the order `mqblast --help` lists them: every command of
// the binary is here, the hidden ones (the child processes' own) last.
func commands() []*cobra.Command {
	return []*cobra.Command{
		newRunCmd(), newLimitCmd(), newConnCmd(), newPubCmd(), newSubCmd(),
		newScenariosCmd(), newValidateCmd(), newCheckCmd(), newTuneCmd(), newAddrsCmd(),
		newReportCmd(), newCompareCmd(), newMergeCmd(), newStudyCmd(),
		newSinkCmd(), newNetCmd(), newBrokerCmd(), newVersionCmd(),
		newChildCmd(), newGuardCmd(),
	}
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "mqblast",
		Short: "mqblast: a load generator for MQTT 3.1.1 and 5.0 brokers",
		Long: `mqblast drives hundreds of thousands of MQTT connections from a few event loops,
runs declared scenarios (Point-To-Point, Fan-In, Fan-Out, Connections, ...) against any
MQTT 3.1.1 or 5.0 broker, and reports throughput, latency percentiles and losses.`,
		Example: `  mqblast version
  mqblast --help`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError(err) })
	var cpuProfile, memProfile string
	var stopProfile func()
	root.PersistentFlags().StringVar(&cpuProfile, "cpuprofile", "", "write a Go CPU profile of this process to FILE")
	_ = root.PersistentFlags().MarkHidden("cpuprofile")
	root.PersistentFlags().StringVar(&memProfile, "memprofile", "", "write a Go heap profile of this process to FILE when it ends")
	_ = root.PersistentFlags().MarkHidden("memprofile")
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		if memProfile != "" {
			runtime.MemProfileRate = 4096
		}
		if cpuProfile == "" {
			return nil
		}
		f, err := os.Create(cpuProfile)
		if err != nil {
			return usageError(fmt.Errorf("--cpuprofile: %w", err))
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			_ = f.Close()
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		stopProfile = func() { pprof.StopCPUProfile(); _ = f.Close() }
		return nil
	}
	root.PersistentPostRun = func(*cobra.Command, []string) {
		if stopProfile != nil {
			stopProfile()
		}
		if memProfile != "" {
			if f, err := os.Create(memProfile); err == nil {
				runtime.GC()
				_ = pprof.WriteHeapProfile(f)
				_ = f.Close()
			}
		}
	}
	root.AddCommand(commands()...)
	// Unknown subcommands and bad positional arguments are usage errors (exit 2).
	root.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return usageError(fmt.Errorf("unknown command %q", args[0]))
		}
		return nil
	}
	root.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	return root
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the version, commit and build date",
		Example: "  mqblast version",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "mqblast %s (commit %s, built %s, %s %s/%s)\n",
				version, commit, date, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		},
	}
}
