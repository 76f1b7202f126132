package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mqblast/mqblast/tuning"
)

// needsFlags are the flags that describe a run without a scenario, shared by check and tune.
type needsFlags struct {
	connections, addrs, procs, brokerPort, connectRate int
	localBroker                                        bool
	root                                               string
}

func (nf *needsFlags) register(cmd *cobra.Command, connections int) {
	fl := cmd.Flags()
	fl.IntVarP(&nf.connections, "connections", "c", connections, "connections the run opens from this host")
	fl.IntVar(&nf.addrs, "addrs", 1, "source addresses the connections are spread over (--bind)")
	fl.IntVar(&nf.procs, "procs", 1, "mqblast processes sharing the connections, each with its own descriptor limit")
	fl.BoolVar(&nf.localBroker, "local-broker", false, "the broker runs on this host (listen backlog, twice the sockets)")
	fl.IntVar(&nf.brokerPort, "broker-port", tuning.DefaultBrokerPort, "the broker's TCP port (conntrack bypass rule)")
	fl.IntVar(&nf.connectRate, "connect-rate", 0, "planned connections per second, 0 for unknown (listen backlog)")
	fl.StringVar(&nf.root, "root", "/", "file system root to read /proc and /sys under")
	_ = fl.MarkHidden("root")
}

func (nf *needsFlags) needs() (tuning.Needs, error) {
	switch {
	case nf.connections < 1:
		return tuning.Needs{}, usageError(fmt.Errorf("--connections %d: want at least 1", nf.connections))
	case nf.addrs < 1:
		return tuning.Needs{}, usageError(fmt.Errorf("--addrs %d: want at least 1", nf.addrs))
	case nf.procs < 1:
		return tuning.Needs{}, usageError(fmt.Errorf("--procs %d: want at least 1", nf.procs))
	case nf.connectRate < 0:
		return tuning.Needs{}, usageError(fmt.Errorf("--connect-rate %d: want 0 or more", nf.connectRate))
	}
	n := tuning.ForConnections(nf.connections, nf.addrs, nf.procs)
	n.LocalBroker = nf.localBroker
	n.BrokerPort = nf.brokerPort
	n.ConnectRate = nf.connectRate
	return n, nil
}

func newCheckCmd() *cobra.Command {
	var (
		nf     needsFlags
		format string
	)
	cmd := &cobra.Command{
		Use:   "check [SCENARIO | --connections N]",
		Short: "Check whether this host can carry a run",
		Long: `check reads every kernel and process limit a run depends on (RLIMIT_NOFILE and whether
this process may raise it, fs.nr_open, fs.file-max, the local port range against the source
addresses, TIME_WAIT, conntrack, listen backlogs for a local broker, tcp_mem, transparent huge
pages, swap, free memory, cores) and prints each with its current value, the value the run
needs, a verdict (ok, warn, fail), why it matters and the exact command that fixes it.

It exits 0 when the host is ready and 4 when a check failed; warnings do not fail it.
'mqblast tune apply' applies the sysctl and rlimit fixes it can.`,
		Example: `  mqblast check --connections 100000
  mqblast check -c 1000000 --addrs 20 --procs 4 --format json
  mqblast check -c 50000 --local-broker --connect-rate 5000`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageError(fmt.Errorf("check takes at most one scenario, got %d arguments", len(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "text" && format != "json" {
				return usageError(fmt.Errorf("--format %q: want text or json", format))
			}
			var needs tuning.Needs
			var err error
			if len(args) == 1 {
				if cmd.Flags().Changed("connections") {
					return usageError(errors.New("give a scenario or --connections, not both"))
				}
				needs, err = planNeeds(cmd.Context(), args[0])
			} else {
				needs, err = nf.needs()
			}
			if err != nil {
				return err
			}
			r := tuning.Check(nf.root, needs)
			if err := r.Write(cmd.OutOrStdout(), format); err != nil {
				return err
			}
			if !r.Ready() {
				return withCode(exitNotReady, fmt.Errorf("host not ready: %d checks failed", r.Count(tuning.Fail)))
			}
			return nil
		},
	}
	nf.register(cmd, 0)
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	return cmd
}
