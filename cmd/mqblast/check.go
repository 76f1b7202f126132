package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mqblast/mqblast/tuning"
)

// needsFlags are the flags that describe a run without a scenario, shared by check and tune.
type needsFlags struct {
	d    tuning.Described
	root string
}

func (nf *needsFlags) register(cmd *cobra.Command, connections int) {
	fl := cmd.Flags()
	fl.IntVarP(&nf.d.Connections, "connections", "c", connections, "connections the run opens from this host")
	fl.IntVar(&nf.d.Addrs, "addrs", 1, "source addresses the connections are spread over (--bind)")
	fl.IntVar(&nf.d.Procs, "procs", 1, "mqblast processes sharing the connections, each with its own descriptor limit")
	fl.BoolVar(&nf.d.LocalBroker, "local-broker", false, "the broker runs on this host (listen backlog, twice the sockets)")
	fl.IntVar(&nf.d.BrokerPort, "broker-port", tuning.DefaultBrokerPort, "the broker's TCP port (conntrack bypass rule)")
	fl.IntVar(&nf.d.ConnectRate, "connect-rate", 0, "planned connections per second, 0 for unknown (listen backlog)")
	fl.StringVar(&nf.root, "root", "/", "file system root to read /proc and /sys under")
	_ = fl.MarkHidden("root")
}

func newCheckCmd() *cobra.Command {
	var (
		nf     needsFlags
		format string
	)
	cmd := &cobra.Command{
		Use:     "check [SCENARIO | --connections N]",
		Short:   "Check whether this host can carry a run",
		Long:    helpText("check"),
		Example: examples("check"),
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageError(fmt.Errorf("check takes at most one scenario, got %d arguments", len(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			needs, err := nf.d.Needs()
			if len(args) == 1 {
				if cmd.Flags().Changed("connections") {
					return usageError(errors.New("give a scenario or --connections, not both"))
				}
				needs, err = planNeeds(cmd.Context(), args[0])
			}
			if err != nil {
				return err
			}
			return tuning.CheckHost(cmd.OutOrStdout(), nf.root, needs, format)
		},
	}
	nf.register(cmd, 0)
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	return cmd
}
