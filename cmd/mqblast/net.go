package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/mqblast/mqblast/network"
	"github.com/mqblast/mqblast/tuning"
)

func newNetCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "net",
		Short:   "Network profiles: delay, jitter and loss on the path to the broker",
		Long:    helpText("net") + "\n\n" + tuning.ProfileSyntax,
		Example: examples("net"),
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newNetShowCmd(), newNetApplyCmd(), newNetClearCmd(), newNetEmulateCmd())
	return cmd
}

func newNetShowCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "show [PROFILE]",
		Short:   "List the named profiles, or show what PROFILE does each way; say whether this kernel has netem",
		Long:    helpText("net-show") + "\n\n" + tuning.ProfileSyntax,
		Example: examples("net-show"),
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return network.ShowProfiles(cmd.OutOrStdout(), args, geteuid() == 0)
		},
	}
}

func newNetApplyCmd() *cobra.Command {
	var to, dev string
	var dryRun bool
	cmd := &cobra.Command{
		Use:     "apply PROFILE --to ADDR [--dev DEV] [--dry-run]",
		Short:   "Put PROFILE on the path to the broker at ADDR with tc netem (root; kernels with sch_netem)",
		Long:    helpText("net-apply") + "\n\n" + tuning.ProfileSyntax,
		Example: examples("net-apply"),
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError(fmt.Errorf("net apply takes one PROFILE, got %d arguments", len(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return network.Apply(cmd.OutOrStdout(), args[0], to, dev, dryRun)
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "the broker's IP address (host:port is accepted)")
	cmd.Flags().StringVar(&dev, "dev", "", "the interface toward the broker (default: from 'ip route get ADDR')")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print the tc commands without running them")
	return cmd
}

func newNetClearCmd() *cobra.Command {
	var to, dev string
	var all bool
	cmd := &cobra.Command{
		Use:     "clear [--to ADDR | --dev DEV] [--all]",
		Short:   "Remove netem from the path to a broker, and the emulator namespaces a crashed run left (root)",
		Long:    helpText("net-clear"),
		Example: examples("net-clear"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return network.Clear(cmd.OutOrStdout(), to, dev, all)
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "the broker's IP address given to 'net apply'")
	cmd.Flags().StringVar(&dev, "dev", "", "the interface 'net apply' used")
	cmd.Flags().BoolVar(&all, "all", false, "also remove the emulator namespaces of running mqblast processes")
	return cmd
}

type emulateFlags struct {
	brokerCmd string
	clients   int
	normal    bool
	stats     string
}

func newNetEmulateCmd() *cobra.Command {
	var ef emulateFlags
	cmd := &cobra.Command{
		Use:     "emulate PROFILE [--broker-cmd CMD] [-- CLIENT-COMMAND...]",
		Short:   "Run the user-space packet emulator: a broker namespace and a client namespace joined through PROFILE (root)",
		Long:    helpText("net-emulate") + "\n\n" + tuning.ProfileSyntax,
		Example: examples("net-emulate"),
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) < 1 {
				return usageError(errors.New("net emulate takes a PROFILE, then optionally -- and the client command"))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := network.ParseProfile(args[0])
			if err != nil {
				return err
			}
			if n := cmd.ArgsLenAtDash(); n > 1 {
				return usageError(fmt.Errorf("net emulate: unexpected %q before --: the client command goes after --", args[1]))
			}
			return network.Emulate(cmd.Context(), network.EmulateOptions{Profile: p, BrokerCmd: ef.brokerCmd, ClientAddrs: ef.clients,
				NormalPriority: ef.normal, Stats: ef.stats, Client: args[1:], Log: cmd.ErrOrStderr(),
				Stdio: network.Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}})
		},
	}
	cmd.Flags().StringVar(&ef.brokerCmd, "broker-cmd", "", "command (sh -c) that runs the broker in the broker namespace")
	cmd.Flags().IntVar(&ef.clients, "client-addrs", 1, "addresses of the client namespace (10.211.0.2 and on), for runs that need more source ports")
	cmd.Flags().BoolVar(&ef.normal, "normal-priority", false, "keep the emulator thread in the normal scheduling class (default: SCHED_FIFO, so that frames leave on time on a busy host)")
	cmd.Flags().StringVar(&ef.stats, "stats", "", "also write the emulator's counters as JSON to this file at the end")
	return cmd
}
