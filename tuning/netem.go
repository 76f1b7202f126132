package tuning

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// NetemPlan is what puts a profile on the path to one broker with the kernel's netem qdisc
// (tc-netem(8)): the Up direction on the egress of Dev, filtered to packets for the broker's
// address, and the Down direction on Dev's ingress, redirected through the IFB device IFB
// (filtered to packets from the broker). Other traffic on Dev is untouched.
type NetemPlan struct {
	Dev string
	IFB string
	// Apply are the commands (argv) that put the profile in place, in order.
	Apply [][]string
	// Clear are the commands that remove it: Dev's root and ingress qdiscs go back to the
	// kernel's default and the IFB device is deleted. Each may fail when its part is absent.
	Clear [][]string
}

// IFBName is the IFB device PlanNetem uses for dev.
func IFBName(dev string) string {
	name := "mqb-" + dev
	if len(name) > 15 { // IFNAMSIZ-1
		name = name[:15]
	}
	return name
}

// PlanNetem returns the commands that apply p on dev to the traffic to and from broker.
// Apply replaces dev's root qdisc (a 4-band prio whose bands 1-3 keep the default priomap and
// whose band 4 holds the netem) and its ingress qdisc; Clear deletes both.
func PlanNetem(p Profile, dev string, broker netip.Addr) (NetemPlan, error) {
	if err := p.Validate(); err != nil {
		return NetemPlan{}, err
	}
	if dev == "" || strings.ContainsAny(dev, " /\t") || len(dev) > 15 {
		return NetemPlan{}, fmt.Errorf("netem: device %q is not an interface name", dev)
	}
	if !broker.IsValid() {
		return NetemPlan{}, errors.New("netem: no broker address: give the address of the broker (--to ADDR)")
	}
	broker = broker.Unmap()
	proto, match, bits := "ip", "ip", "/32"
	if broker.Is6() {
		proto, match, bits = "ipv6", "ip6", "/128"
	}
	ifb := IFBName(dev)
	n := NetemPlan{Dev: dev, IFB: ifb}
	if !p.Up.IsZero() {
		n.Apply = append(n.Apply,
			[]string{"tc", "qdisc", "replace", "dev", dev, "root", "handle", "1:", "prio", "bands", "4"},
			append([]string{"tc", "qdisc", "add", "dev", dev, "parent", "1:4", "handle", "40:"}, netemArgs(p.Up)...),
			[]string{"tc", "filter", "add", "dev", dev, "parent", "1:0", "protocol", proto, "prio", "1",
				"u32", "match", match, "dst", broker.String() + bits, "flowid", "1:4"},
		)
	}
	if !p.Down.IsZero() {
		n.Apply = append(n.Apply,
			[]string{"ip", "link", "add", ifb, "type", "ifb"},
			[]string{"ip", "link", "set", ifb, "up"},
			[]string{"tc", "qdisc", "replace", "dev", dev, "handle", "ffff:", "ingress"},
			[]string{"tc", "filter", "add", "dev", dev, "parent", "ffff:", "protocol", proto, "prio", "1",
				"u32", "match", match, "src", broker.String() + bits,
				"action", "mirred", "egress", "redirect", "dev", ifb},
			append([]string{"tc", "qdisc", "replace", "dev", ifb, "root"}, netemArgs(p.Down)...),
		)
	}
	n.Clear = [][]string{
		{"tc", "qdisc", "del", "dev", dev, "root"},
		{"tc", "qdisc", "del", "dev", dev, "ingress"},
		{"ip", "link", "del", ifb},
	}
	return n, nil
}

// netemArgs is "netem delay D J loss random L%" for one direction, durations in µs.
func netemArgs(p Path) []string {
	us := func(d time.Duration) string { return strconv.FormatInt(d.Microseconds(), 10) + "us" }
	args := []string{"netem", "limit", "100000"}
	if p.Delay > 0 {
		args = append(args, "delay", us(p.Delay))
		if p.Jitter > 0 {
			args = append(args, us(p.Jitter))
		}
	}
	if p.Loss > 0 {
		args = append(args, "loss", "random", formatPercent(p.Loss))
	}
	return args
}

// RunCommands runs each argv in order and stops at the first failure, unless keepGoing, in
// which case it runs them all and returns the failures joined. Each error holds the command
// and its output.
func RunCommands(cmds [][]string, keepGoing bool) error {
	var errs []error
	for _, c := range cmds {
		out, err := exec.Command(c[0], c[1:]...).CombinedOutput()
		if err != nil {
			err = fmt.Errorf("%s: %w: %s", strings.Join(c, " "), err, strings.TrimSpace(string(out)))
			if !keepGoing {
				return err
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// NetemAvailable reports whether this kernel has sch_netem (and IFB, for the ingress
// direction): it tries both in a network namespace of its own, netem on its loopback device,
// and deletes the namespace (root and ip(8) needed). A nil error means PlanNetem's commands can work here.
func NetemAvailable() error {
	if _, err := exec.LookPath("tc"); err != nil {
		return fmt.Errorf("netem: tc(8) not found (apt-get install iproute2): %w", err)
	}
	ns := fmt.Sprintf("mqb-probe-%d", os.Getpid())
	if err := RunCommands([][]string{{"ip", "netns", "add", ns}}, false); err != nil {
		return fmt.Errorf("netem: cannot probe in a network namespace (root needed): %w", err)
	}
	defer func() { _ = RunCommands([][]string{{"ip", "netns", "del", ns}}, false) }()
	err := RunCommands([][]string{{"tc", "-n", ns, "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"}}, false)
	if err != nil {
		return fmt.Errorf("netem: this kernel has no sch_netem (CONFIG_NET_SCH_NETEM); use the user-space emulator ('mqblast net emulate'): %w", err)
	}
	if err := RunCommands([][]string{{"ip", "-n", ns, "link", "add", "mqbifb0", "type", "ifb"}}, false); err != nil {
		return fmt.Errorf("netem: this kernel has no IFB device (CONFIG_IFB) for the broker-to-client direction: %w", err)
	}
	return nil
}
