package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/tuning"
	"github.com/mqblast/mqblast/tuning/netemu"
)

func init() { register(newNetCmd) }

// netBrokerPort is the port the broker listens on in the emulator's broker namespace.
const netBrokerPort = "1883"

func newNetCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "net",
		Short: "Network profiles: delay, jitter and loss on the path to the broker",
		Long: `net puts a network profile between the client and the broker (DESIGN.md §9).

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

func parseProfileArg(s string) (tuning.Profile, error) {
	p, err := tuning.ParseProfile(s)
	if err != nil {
		return p, usageError(err)
	}
	return p, nil
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
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(w, "PROFILE\tUP (client to broker)\tDOWN (broker to client)\t")
			if len(args) == 1 {
				p, err := parseProfileArg(args[0])
				if err != nil {
					return err
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t\n", p, p.Up, p.Down)
			} else {
				for _, np := range tuning.NamedProfiles() {
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", np.Profile.Name, np.Profile.Up, np.Profile.Down, np.About)
				}
			}
			if err := w.Flush(); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if geteuid() != 0 {
				fmt.Fprintln(out, "netem: not probed (root needed): 'net apply' needs sch_netem; 'net emulate' works without it")
				return nil
			}
			if err := tuning.NetemAvailable(); err != nil {
				fmt.Fprintf(out, "netem: not available here (%v)\n", err)
				return nil
			}
			fmt.Fprintln(out, "netem: available: 'mqblast net apply PROFILE --to ADDR' works here")
			return nil
		},
	}
}

// netemTarget parses --to (an address, or host:port of a broker) and finds --dev.
func netemTarget(to, dev string) (netip.Addr, string, error) {
	if to == "" {
		return netip.Addr{}, "", usageError(errors.New("--to ADDR is required: the broker's IP address"))
	}
	host := to
	if h, _, err := net.SplitHostPort(to); err == nil {
		host = h
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, "", usageError(fmt.Errorf("--to %q: want the broker's IP address (192.0.2.10 or [2001:db8::1]:1883)", to))
	}
	if dev != "" {
		return addr, dev, nil
	}
	out, err := exec.Command("ip", "route", "get", addr.String()).CombinedOutput()
	if err != nil {
		return addr, "", fmt.Errorf("cannot find the interface toward %s (ip route get): %w: %s; give --dev", addr, err, strings.TrimSpace(string(out)))
	}
	f := strings.Fields(string(out))
	for i := 0; i+1 < len(f); i++ {
		if f[i] == "dev" {
			return addr, f[i+1], nil
		}
	}
	return addr, "", fmt.Errorf("ip route get %s names no interface: give --dev", addr)
}

func printCommands(w io.Writer, cmds [][]string) {
	for _, c := range cmds {
		fmt.Fprintf(w, "  %s\n", strings.Join(c, " "))
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
			p, err := parseProfileArg(args[0])
			if err != nil {
				return err
			}
			addr, dev, err := netemTarget(to, dev)
			if err != nil {
				return err
			}
			plan, err := tuning.PlanNetem(p, dev, addr)
			if err != nil {
				return usageError(err)
			}
			out := cmd.OutOrStdout()
			if dryRun {
				fmt.Fprintf(out, "would apply %s toward %s on %s:\n", p, addr, dev)
				printCommands(out, plan.Apply)
				fmt.Fprintln(out, "and clear it with:")
				printCommands(out, plan.Clear)
				return nil
			}
			return applyNetem(out, p, plan, addr)
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "the broker's IP address (host:port is accepted)")
	cmd.Flags().StringVar(&dev, "dev", "", "the interface toward the broker (default: from 'ip route get ADDR')")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print the tc commands without running them")
	return cmd
}

// applyNetem runs plan.Apply after checking root and netem, clearing again on failure.
func applyNetem(out io.Writer, p tuning.Profile, plan tuning.NetemPlan, addr netip.Addr) error {
	if geteuid() != 0 {
		return errors.New("net apply changes the host's qdiscs and needs root; try --dry-run to see the commands")
	}
	if err := tuning.NetemAvailable(); err != nil {
		return fmt.Errorf("%w; 'mqblast run --net PROFILE' and 'mqblast net emulate' need no netem", err)
	}
	if err := tuning.RunCommands(plan.Apply, false); err != nil {
		_ = tuning.RunCommands(plan.Clear, true)
		return fmt.Errorf("cannot apply %s (cleared again): %w", p, err)
	}
	fmt.Fprintf(out, "applied %s toward %s on %s; clear it with: mqblast net clear --to %s\n", p, addr, plan.Dev, addr)
	return nil
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
runs in them; --all removes those of running mqblast processes too.`,
		Example: `  sudo mqblast net clear
  sudo mqblast net clear --to 192.0.2.10
  sudo mqblast net clear --all`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if geteuid() != 0 {
				return errors.New("net clear changes the host's network setup and needs root")
			}
			out := cmd.OutOrStdout()
			var errs []error
			if to != "" || dev != "" {
				addr := netip.MustParseAddr("192.0.2.1") // PlanNetem wants one; Clear does not use it
				var err error
				if to != "" {
					if addr, dev, err = netemTarget(to, dev); err != nil {
						return err
					}
				}
				plan, err := tuning.PlanNetem(tuning.Profile{}, dev, addr)
				if err != nil {
					return usageError(err)
				}
				// Each part may be absent: report what failed for another reason only.
				for _, c := range plan.Clear {
					if err := tuning.RunCommands([][]string{c}, false); err != nil && !strings.Contains(err.Error(), "Cannot find") &&
						!strings.Contains(err.Error(), "Invalid handle") && !strings.Contains(err.Error(), "No such file") &&
						!strings.Contains(err.Error(), "Cannot delete qdisc with handle of zero") {
						errs = append(errs, err)
					}
				}
				fmt.Fprintf(out, "cleared netem on %s\n", dev)
			}
			left, err := netemu.Leftovers(all)
			if err != nil {
				return err
			}
			if err := netemu.Remove(left); err != nil {
				errs = append(errs, err)
			}
			if len(left) > 0 {
				fmt.Fprintf(out, "removed emulator namespaces: %s\n", strings.Join(left, " "))
			} else {
				fmt.Fprintln(out, "no emulator namespaces left over")
			}
			return errors.Join(errs...)
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
			p, err := parseProfileArg(args[0])
			if err != nil {
				return err
			}
			if n := cmd.ArgsLenAtDash(); n > 1 {
				return usageError(fmt.Errorf("net emulate: unexpected %q before --: the client command goes after --", args[1]))
			}
			return emulate(cmd, p, ef, args[1:])
		},
	}
	cmd.Flags().StringVar(&ef.brokerCmd, "broker-cmd", "", "command (sh -c) that runs the broker in the broker namespace")
	cmd.Flags().IntVar(&ef.clients, "client-addrs", 1, "addresses of the client namespace (10.211.0.2 and on), for runs that need more source ports")
	cmd.Flags().BoolVar(&ef.normal, "normal-priority", false, "keep the emulator thread in the normal scheduling class (default: SCHED_FIFO, so that frames leave on time on a busy host)")
	cmd.Flags().StringVar(&ef.stats, "stats", "", "also write the emulator's counters as JSON to this file at the end")
	return cmd
}

// startLink removes the namespaces of dead mqblast processes and starts a link.
func startLink(w io.Writer, p tuning.Profile, clients int, normal bool) (*netemu.Link, error) {
	if geteuid() != 0 {
		return nil, errors.New("the packet emulator creates network namespaces and needs root")
	}
	if left, err := netemu.Leftovers(false); err == nil && len(left) > 0 {
		if err := netemu.Remove(left); err != nil {
			return nil, err
		}
		fmt.Fprintf(w, "removed the emulator namespaces of a run that is gone: %s\n", strings.Join(left, " "))
	}
	l, err := netemu.Start(netemu.Config{Profile: p, ClientAddrs: clients, NormalPriority: normal})
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "network profile %s through the packet emulator: broker namespace %s (%s), client namespace %s (%s)\n",
		p, l.BrokerNS(), l.BrokerAddr(), l.ClientNS(), l.ClientAddrs()[0])
	return l, nil
}

// startNetBroker runs shell in the broker namespace (output to w) and waits until something
// accepts on BrokerAddr:port, for at most 10 s.
func startNetBroker(ctx context.Context, w io.Writer, l *netemu.Link, shell, port string) error {
	b := l.BrokerCommand(ctx, "sh", "-c", shell)
	b.Stdout, b.Stderr = w, w
	if err := b.Start(); err != nil {
		return fmt.Errorf("cannot start the broker in %s: %w", l.BrokerNS(), err)
	}
	exited := make(chan error, 1)
	go func() { exited <- b.Wait() }()
	addr := net.JoinHostPort(l.BrokerAddr().String(), port)
	for deadline := time.Now().Add(10 * time.Second); ; {
		select {
		case err := <-exited:
			if err == nil {
				err = errors.New("exit status 0")
			}
			return fmt.Errorf("the broker command %q ended before it listened on %s: %w", shell, addr, err)
		default:
		}
		dctx, cancel := context.WithTimeout(ctx, time.Second)
		c, err := l.Dial(dctx, "tcp", addr)
		cancel()
		if err == nil {
			_ = c.Close()
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("the broker command %q does not accept on %s after 10 s: %w", shell, addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// runInClient runs argv in the client namespace with our stdio and returns its exit code
// (withCode). On ctx's end (Ctrl-C, SIGTERM) it passes SIGINT on, so that a `mqblast run`
// there writes its partial result, and kills it 15 s later.
func runInClient(ctx context.Context, l *netemu.Link, argv []string, env []string) error {
	c := l.ClientCommand(context.Background(), argv[0], argv[1:]...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	c.Env = append(os.Environ(), env...)
	if err := c.Start(); err != nil {
		return fmt.Errorf("cannot start %q in %s: %w", argv[0], l.ClientNS(), err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = c.Process.Signal(syscall.SIGINT)
		select {
		case err = <-done:
		case <-time.After(15 * time.Second):
			_ = c.Process.Kill()
			err = <-done
		}
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code := ee.ExitCode()
		if code < 0 {
			code = exitInterrupted
		}
		return withCode(code, fmt.Errorf("%s exited with code %d", filepath.Base(argv[0]), code))
	}
	return err
}

func emulate(cmd *cobra.Command, p tuning.Profile, ef emulateFlags, client []string) error {
	ctx := cmd.Context()
	w := cmd.ErrOrStderr()
	l, err := startLink(w, p, ef.clients, ef.normal)
	if err != nil {
		return err
	}
	defer func() { _ = l.Close() }()
	if ef.brokerCmd != "" {
		if err := startNetBroker(ctx, w, l, ef.brokerCmd, netBrokerPort); err != nil {
			return err
		}
	}
	if len(client) > 0 {
		err = runInClient(ctx, l, client, []string{"MQBLAST_NET_BROKER=" + l.BrokerAddr().String()})
	} else {
		fmt.Fprintf(w, "running until Ctrl-C; join with: ip netns exec %s COMMAND (broker: ip netns exec %s COMMAND)\n", l.ClientNS(), l.BrokerNS())
		<-ctx.Done()
	}
	writeEmuStats(w, l.Stats())
	if ef.stats != "" {
		if werr := writeJSONFile(ef.stats, l.Stats()); werr != nil && err == nil {
			err = werr
		}
	}
	if cerr := l.Close(); cerr != nil && err == nil {
		err = cerr
	}
	return err
}

func writeEmuStats(w io.Writer, st netemu.Stats) {
	for _, d := range []struct {
		name string
		s    netemu.DirStats
	}{{"up (client to broker)", st.Up}, {"down (broker to client)", st.Down}} {
		fmt.Fprintf(w, "emulator %s: %d frames, %d sent, %d lost by the profile, %d by a full queue, %d by the kernel; read %v after arrival and sent %v after due on average (at most %v, %v)\n",
			d.name, d.s.Frames, d.s.Sent, d.s.Lost, d.s.Overflow, d.s.KernelDrops, d.s.ReadLag/time.Duration(max(d.s.Frames, 1)),
			d.s.Late/time.Duration(max(d.s.Sent, 1)), d.s.MaxReadLag, d.s.MaxLate)
	}
	fmt.Fprintf(w, "emulator CPU: %v for %d frames (%v per frame, %d wakes, SCHED_FIFO %v)\n", st.CPU.Round(time.Millisecond),
		st.Up.Frames+st.Down.Frames, st.CPUPerFrame(), st.Wakes, st.Realtime)
}

func writeJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
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

// runWithNet runs a `mqblast run` under rf.net.profile. With --broker and a kernel that
// has sch_netem, it applies netem toward each broker address, calls run, and clears it
// again (also after Ctrl-C). Otherwise it starts the packet emulator, a broker in its broker
// namespace (--net-broker-cmd, or Mosquitto), and this same command line, without --net,
// in its client namespace against that broker; then it removes the namespaces.
func runWithNet(cmd *cobra.Command, rf *runFlags, run func() error) error {
	p, err := parseProfileArg(rf.net.profile)
	if err != nil {
		return fmt.Errorf("--net: %w", err)
	}
	w := cmd.ErrOrStderr()
	if len(rf.brokers) > 0 && rf.net.brokerCmd == "" {
		if geteuid() != 0 {
			return usageError(errors.New("--net changes the host's qdiscs (tc netem) and needs root"))
		}
		if err := tuning.NetemAvailable(); err != nil {
			return usageError(fmt.Errorf("--net with --broker needs sch_netem, which this host lacks (%v); "+
				"without --broker (or with --net-broker-cmd), --net runs the broker behind the packet emulator", err))
		}
		var plans []tuning.NetemPlan
		defer func() {
			for _, plan := range plans {
				if err := tuning.RunCommands(plan.Clear, true); err != nil {
					fmt.Fprintf(w, "--net: clearing netem on %s: %v\n", plan.Dev, err)
				}
			}
		}()
		for _, b := range rf.brokers {
			addr, dev, err := netemTarget(strings.TrimPrefix(strings.TrimPrefix(b, "mqtt://"), "tcp://"), "")
			if err != nil {
				return err
			}
			plan, err := tuning.PlanNetem(p, dev, addr)
			if err != nil {
				return usageError(err)
			}
			plans = append(plans, plan)
			if err := applyNetem(w, p, plan, addr); err != nil {
				return err
			}
		}
		rf.netInfo = &result.NetworkInfo{Profile: p.String(), Up: result.Path(p.Up), Down: result.Path(p.Down), Via: "netem"}
		return run()
	}
	port := netBrokerPort
	for _, b := range rf.brokers {
		host, bport, err := net.SplitHostPort(b)
		if err != nil || host != netemu.BrokerAddr.String() {
			return usageError(fmt.Errorf("--broker %q with --net-broker-cmd: the broker listens in the emulator's broker namespace, so give %s:PORT or no --broker", b, netemu.BrokerAddr))
		}
		port = bport
	}
	shell := rf.net.brokerCmd
	if shell == "" {
		var dir string
		if shell, dir, err = mosquittoCommand(port); err != nil {
			return err
		}
		defer os.RemoveAll(dir) //nolint:errcheck
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("--net: cannot find this executable to run it in the client namespace: %w", err)
	}
	ctx := cmd.Context()
	l, err := startLink(w, p, 1, false)
	if err != nil {
		return err
	}
	defer func() { _ = l.Close() }()
	if err := startNetBroker(ctx, w, l, shell, port); err != nil {
		return err
	}
	argv := append([]string{exe}, withoutNetFlags(os.Args[1:])...)
	if len(rf.brokers) == 0 {
		argv = append(argv, "--broker", net.JoinHostPort(l.BrokerAddr().String(), port))
	}
	err = runInClient(ctx, l, argv, []string{netProfileEnv + "=" + p.String()})
	writeEmuStats(w, l.Stats())
	if cerr := l.Close(); cerr != nil && err == nil {
		err = cerr
	}
	return err
}

// netProfileEnv names, to a run in the emulator's client namespace, the profile it runs
// under, for its result.
const netProfileEnv = "MQBLAST_NET_PROFILE"

// emulatedProfile is the profile a run inside the emulator's client namespace goes through
// (netProfileEnv), for its result; nil outside.
func emulatedProfile(getenv func(string) string) *result.NetworkInfo {
	v := getenv(netProfileEnv)
	if v == "" {
		return nil
	}
	p, err := tuning.ParseProfile(v)
	if err != nil {
		return &result.NetworkInfo{Profile: v, Via: "emulator"}
	}
	return &result.NetworkInfo{Profile: p.String(), Up: result.Path(p.Up), Down: result.Path(p.Down), Via: "emulator"}
}

// withoutNetFlags is args without --net and --net-broker-cmd and their values.
func withoutNetFlags(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--net" || a == "--net-broker-cmd":
			i++ // and its value
		case strings.HasPrefix(a, "--net=") || strings.HasPrefix(a, "--net-broker-cmd="):
		default:
			out = append(out, a)
		}
	}
	return out
}

// mosquittoCommand writes a Mosquitto config listening on BrokerAddr:port (otherwise
// Mosquitto's defaults, quiet but for errors and warnings) in a new temporary directory and
// returns the command that runs it and the directory.
func mosquittoCommand(port string) (shell, dir string, err error) {
	bin, err := exec.LookPath("mosquitto")
	if err != nil {
		if bin, err = exec.LookPath("/usr/sbin/mosquitto"); err != nil {
			return "", "", usageError(errors.New("--net runs a broker behind the packet emulator: install mosquitto (apt-get install mosquitto) or give --net-broker-cmd"))
		}
	}
	if dir, err = os.MkdirTemp("", "mqblast-net-"); err != nil {
		return "", "", err
	}
	conf := filepath.Join(dir, "mosquitto.conf")
	body := fmt.Sprintf("listener %s %s\nallow_anonymous true\nmax_connections -1\npersistence false\nlog_dest stderr\nlog_type error\nlog_type warning\n",
		port, netemu.BrokerAddr)
	if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
		return "", dir, err
	}
	return fmt.Sprintf("exec %s -c %s", bin, conf), dir, nil
}
