package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mqblast/mqblast/network"
	"github.com/mqblast/mqblast/tuning"
)

func newNetCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "net",
		Short: "Network profiles: delay, jitter and loss on the path to the broker",
		Long: `net puts a network profile between the client and the broker.

Where the kernel has sch_netem, 'net apply' puts tc netem on the path to one broker address:
its egress for the client-to-broker direction and its ingress, through an IFB device, for
the way back, filtered to that address; 'net clear' removes it. Where it has not (check with
'mqblast net show'), 'net emulate' runs mqblast's own packet emulator: two network
namespaces, the broker's and the client's, joined through it. Loss is always real packet
loss below TCP.

` + tuning.ProfileSyntax,
		Example: `  mqblast net show
  mqblast net emulate worst --broker-cmd 'mosquitto -c /etc/mosquitto/mosquitto.conf' -- mqblast run quick-p2p-100 --broker 10.211.0.1:1883
  sudo mqblast net apply optimal --to 192.0.2.10
  sudo mqblast net clear --to 192.0.2.10`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newNetShowCmd(), newNetApplyCmd(), newNetClearCmd(), newNetEmulateCmd())
	return cmd
}

func newNetShowCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "show [PROFILE]",
		Short: "List the named profiles, or show what PROFILE does each way; say whether this kernel has netem",
		Long: `show lists the named network profiles with their delay, jitter and loss per direction,
or, given PROFILE, shows that one. As root it also probes (in a namespace of its own) whether
this kernel has sch_netem and IFB, i.e. whether 'net apply' works here or 'net emulate' is the way.

` + tuning.ProfileSyntax,
		Example: `  mqblast net show
  mqblast net show 'worst,up:loss=1%'`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return network.ShowProfiles(cmd.OutOrStdout(), args, geteuid() == 0)
		},
	}
}

func newNetApplyCmd() *cobra.Command {
	var to, dev string
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "apply PROFILE --to ADDR [--dev DEV] [--dry-run]",
		Short: "Put PROFILE on the path to the broker at ADDR with tc netem (root; kernels with sch_netem)",
		Long: `apply puts PROFILE on the traffic between this host and the broker at ADDR with tc netem:
the client-to-broker direction on the egress of DEV (the interface toward ADDR, from
'ip route get', unless --dev), the broker-to-client direction on DEV's ingress through the
IFB device mqb-DEV, both filtered to ADDR so other traffic is untouched. It replaces DEV's
root and ingress qdiscs; 'mqblast net clear --to ADDR' puts the kernel's defaults back. For a
broker on loopback give it an address of its own (127.0.0.2): the client's must differ.

This kernel may have no sch_netem ('mqblast net show' says): then use 'mqblast net emulate'
or 'mqblast run --net PROFILE', which need none. --dry-run prints the commands only.

` + tuning.ProfileSyntax,
		Example: `  sudo mqblast net apply worst --to 192.0.2.10
  mqblast net apply 'delay=2ms,jitter=0.4ms,loss=0.03%' --to 192.0.2.10 --dev eth0 --dry-run`,
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
		Use:   "clear [--to ADDR | --dev DEV] [--all]",
		Short: "Remove netem from the path to a broker, and the emulator namespaces a crashed run left (root)",
		Long: `clear removes what 'net apply' put on DEV (the interface toward ADDR): its root and
ingress qdiscs and the IFB device mqb-DEV. It always also removes the network namespaces of
the packet emulator (mqb-<pid>-b, -c, -e) whose mqblast process is gone, killing what still
runs in them, and the temporary directories of such runs (mqblast-net-<pid>-N in $TMPDIR);
--all removes the namespaces of running mqblast processes too.`,
		Example: `  sudo mqblast net clear
  sudo mqblast net clear --to 192.0.2.10
  sudo mqblast net clear --all`,
		Args: cobra.NoArgs,
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
		Use:   "emulate PROFILE [--broker-cmd CMD] [-- CLIENT-COMMAND...]",
		Short: "Run the user-space packet emulator: a broker namespace and a client namespace joined through PROFILE (root)",
		Long: `emulate creates two network namespaces, the broker's (mqb-<pid>-b, address 10.211.0.1)
and the client's (mqb-<pid>-c, 10.211.0.2 and on), joined through mqblast's packet emulator,
which delays, jitters (without reordering) and drops the frames between them as PROFILE says:
real packet loss below TCP. It needs no sch_netem.

--broker-cmd runs a broker in the broker namespace (through sh -c; it must listen on
10.211.0.1 or on every address). CLIENT-COMMAND, after --, runs in the client namespace with
$MQBLAST_NET_BROKER set to 10.211.0.1; when it ends, emulate removes the namespaces and exits
with its exit code. Without one, emulate runs until Ctrl-C, and any command can join the
namespaces with 'ip netns exec'. At the end it prints what the emulator did (frames, drops,
its own CPU per frame). A crashed emulate leaves namespaces that 'mqblast net clear' removes.

` + tuning.ProfileSyntax,
		Example: `  sudo mqblast net emulate worst --broker-cmd 'mosquitto -c /etc/mosquitto/mosquitto.conf' -- mqblast run quick-p2p-100 --broker 10.211.0.1:1883
  sudo mqblast net emulate 'delay=2ms,jitter=0.4ms,loss=0.03%'   # then: ip netns exec mqb-<pid>-c ...`,
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

// netFlags are the --net flags of `mqblast run`.
type netFlags struct {
	profile   string // --net
	brokerCmd string // --net-broker-cmd
}

func (nf *netFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&nf.profile, "net", "", "network profile between client and broker (local, optimal, typical, worst, cloud or "+
		"delay=2ms,jitter=0.4ms,loss=0.03%; see 'mqblast net'): tc netem toward --broker where the kernel has it, "+
		"else the broker runs behind the packet emulator (root)")
	fl.StringVar(&nf.brokerCmd, "net-broker-cmd", "", "with --net: the broker to start behind the packet emulator (sh -c, "+
		"listening on 10.211.0.1:1883 or every address; default: Mosquitto)")
}
