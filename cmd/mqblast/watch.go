package main

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mqblast/mqblast/bench"
	"github.com/mqblast/mqblast/reactor"
	"github.com/mqblast/mqblast/tuning"
)

// registerWatchFlags adds the flags of the host and broker watch (run and the quick verbs).
func (rf *runFlags) registerWatchFlags(fl *pflag.FlagSet) {
	fl.IntVar(&rf.brokerPID, "broker-pid", 0, "the broker's process, sampled for CPU, RSS and descriptors each interval (default: found when the broker is local)")
	fl.StringVar(&rf.brokerCgroup, "broker-cgroup", "", "the broker's cgroup, sampled for CPU and memory (a cgroup v2 directory, or a v1 path such as /docker/ID)")
}

// newWatch returns the watch of the host and the broker for a run against brokers:
// the broker's pid is embeddedPID (the embedded broker), --broker-pid, or the local
// process listening on the broker's port when the broker address is this host's.
func newWatch(cmd *cobra.Command, rf *runFlags, brokers []string, embeddedPID int) (*bench.Watch, error) {
	pid := embeddedPID
	w := cmd.ErrOrStderr()
	switch {
	case rf.brokerPID < 0:
		return nil, usageError(fmt.Errorf("--broker-pid %d: want a process id", rf.brokerPID))
	case rf.brokerPID > 0:
		if _, err := tuning.ReadProcess(rf.brokerPID); err != nil {
			return nil, usageError(fmt.Errorf("--broker-pid %d: is it running on this host? %w", rf.brokerPID, err))
		}
		pid = rf.brokerPID
	case pid == 0 && len(brokers) == 1:
		if port, ok := localPort(brokers[0]); ok {
			switch ps, err := tuning.FindListeners(port); {
			case err != nil:
			case len(ps) == 1:
				pid = ps[0]
				fmt.Fprintf(w, "broker process: pid %d (%s) listens on port %d; its CPU and memory are sampled (--broker-pid to choose)\n",
					pid, processName(pid), port)
			default: // one process's figures are not the broker's
				fmt.Fprintf(w, "broker process: %d processes listen on port %d (pids %v, %s): not sampled, since one would "+
					"stand for all; --broker-cgroup samples them together, --broker-pid one of them\n", len(ps), port, ps[:min(len(ps), 4)], processName(ps[0]))
			}
		}
	}
	if rf.brokerCgroup != "" {
		if _, err := tuning.ReadCgroup("/sys/fs/cgroup", rf.brokerCgroup); err != nil {
			return nil, usageError(fmt.Errorf("--broker-cgroup %s: %w", rf.brokerCgroup, err))
		}
	}
	return bench.NewWatch(pid, rf.brokerCgroup), nil
}

// localPort returns the port of a host:port whose host is an address of this host.
func localPort(hostport string) (int, bool) {
	_, host, port, _, err := reactor.ParseBroker(hostport) // host:port or a broker URL
	if err != nil {
		return 0, false
	}
	if host == "localhost" {
		return port, true
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return 0, false
	}
	if a.IsLoopback() || a.IsUnspecified() {
		return port, true
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return 0, false
	}
	for _, x := range addrs {
		if ipn, ok := x.(*net.IPNet); ok {
			if b, ok := netip.AddrFromSlice(ipn.IP); ok && b.Unmap() == a.Unmap() {
				return port, true
			}
		}
	}
	return 0, false
}

// processName returns the command name of pid, or "?".
func processName(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(b))
}
