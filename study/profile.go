package study

import (
	"context"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/mqblast/mqblast/internal/child"
	"github.com/mqblast/mqblast/tuning"
	"github.com/mqblast/mqblast/tuning/netemu"
)

// ProfileLocal is the network as it is: no delay, no jitter, no loss.
const ProfileLocal = "local"

// CheckProfile reports whether s is a network profile a campaign may list (tuning's
// ParseProfile: a name or delay/jitter/loss items).
func CheckProfile(s string) error {
	_, err := tuning.ParseProfile(s)
	return err
}

// isLocal reports whether profile s changes nothing.
func isLocalProfile(s string) bool {
	p, err := tuning.ParseProfile(s)
	return err == nil && p.IsLocal()
}

// NeedsEmulator reports whether the campaign has a profile other than local, so that its
// cells run behind the packet emulator (root needed).
func (c *Campaign) NeedsEmulator() bool { return c.needsLink() }

// needsLink reports whether the campaign has a profile other than local.
func (c *Campaign) needsLink() bool {
	for _, p := range c.Profiles {
		if !isLocalProfile(p) {
			return true
		}
	}
	return false
}

// network is the study's path to its brokers: none (loopback and the brokers' addresses),
// or the packet emulator's namespaces (tuning/netemu), one link for the whole study whose
// profile changes per cell. With a link, every broker the study starts runs in the broker
// namespace and every cell's client in the client namespace, local cells included (the
// zero profile), so that two profiles of a broker differ by the profile alone.
type network struct {
	link *netemu.Link
}

func startNetwork(c *Campaign) (*network, string, error) {
	if !c.needsLink() {
		return &network{}, "", nil
	}
	if os.Geteuid() != 0 {
		return nil, "", fmt.Errorf("network profiles need root: the packet emulator (tuning/netemu) creates network namespaces; run the study as root, or list only the profile local")
	}
	link, err := netemu.Start(netemu.Config{})
	if err != nil {
		return nil, "", fmt.Errorf("network profiles need the packet emulator (tuning/netemu), which did not start: %w", err)
	}
	note := fmt.Sprintf("network: the brokers the study starts run in namespace %s at %s, the cells' clients in %s; "+
		"the user-space packet emulator between them applies each cell's profile (local: the zero profile, through the same emulator)",
		link.BrokerNS(), link.BrokerAddr(), link.ClientNS())
	return &network{link: link}, note, nil
}

func (n *network) close() {
	if n != nil && n.link != nil {
		_ = n.link.Close()
	}
}

// apply sets the profile of a cell whose broker is bp, or says why it cannot be applied.
func (n *network) apply(profile string, bp *brokerProc) error {
	p, err := tuning.ParseProfile(profile)
	if err != nil {
		return err
	}
	if n.link == nil {
		if !p.IsLocal() {
			return fmt.Errorf("network profile %q: BUG: no emulator link", profile)
		}
		return nil
	}
	if !bp.starts() {
		if p.IsLocal() {
			return nil
		}
		return fmt.Errorf("network profile %q: needs a broker the study starts (it runs it behind the packet emulator, in a network namespace); "+
			"the external broker %s at %s cannot be put there: give a start command, or list it only under the profile local", profile, bp.b.Name, bp.addr)
	}
	return n.link.SetProfile(p)
}

// stats is the emulator's counters now (zero without a link).
func (n *network) stats() netemu.Stats {
	if n == nil || n.link == nil {
		return netemu.Stats{}
	}
	return n.link.Stats()
}

// NetStats is what the packet emulator did during a cell.
type NetStats struct {
	Profile       string  `json:"profile"` // the profile applied, canonical spelling
	FramesUp      uint64  `json:"frames_up"`
	FramesDown    uint64  `json:"frames_down"`
	LostUp        uint64  `json:"lost_up"` // dropped by the profile's loss
	LostDown      uint64  `json:"lost_down"`
	Overflow      uint64  `json:"overflow"`     // dropped at a full emulator queue: not the profile's
	KernelDrops   uint64  `json:"kernel_drops"` // dropped by the kernel at the emulator's sockets: not the profile's
	MaxLateUS     float64 `json:"max_late_us"`  // the latest frame past its due time
	CPUPerFrameNS float64 `json:"cpu_per_frame_ns"`
}

func netDelta(profile string, a, b netemu.Stats) *NetStats {
	p, _ := tuning.ParseProfile(profile)
	s := &NetStats{Profile: p.String(), FramesUp: b.Up.Frames - a.Up.Frames, FramesDown: b.Down.Frames - a.Down.Frames,
		LostUp: b.Up.Lost - a.Up.Lost, LostDown: b.Down.Lost - a.Down.Lost,
		Overflow:    b.Up.Overflow + b.Down.Overflow - a.Up.Overflow - a.Down.Overflow,
		KernelDrops: b.Up.KernelDrops + b.Down.KernelDrops - a.Up.KernelDrops - a.Down.KernelDrops,
		MaxLateUS:   float64(max(b.Up.MaxLate, b.Down.MaxLate)) / float64(time.Microsecond)}
	if f := s.FramesUp + s.FramesDown; f > 0 {
		s.CPUPerFrameNS = float64(b.CPU-a.CPU) / float64(f)
	}
	return s
}

// inLink reports whether the broker runs behind the emulator.
func (n *network) inLink(bp *brokerProc) bool { return n != nil && n.link != nil && bp.starts() }

// brokerHost is the address a broker the study starts listens on under the link.
func (n *network) brokerHost() string { return n.link.BrokerAddr().String() }

// wrapBroker runs argv in the broker namespace.
func (n *network) wrapBroker(argv []string) []string {
	return append([]string{"ip", "netns", "exec", n.link.BrokerNS()}, argv...)
}

// wrapClient runs argv in the client namespace.
func (n *network) wrapClient(argv []string) []string {
	return append([]string{"ip", "netns", "exec", n.link.ClientNS()}, argv...)
}

// dial opens a TCP connection to addr from the client's side.
func (n *network) dial(addr string, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return n.link.Dial(ctx, "tcp", addr)
}

// freePort finds a free port on the broker namespace's address.
func (n *network) freePort() (int, error) {
	ln, err := n.link.Listen(context.Background(), "tcp", net.JoinHostPort(n.brokerHost(), "0"))
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// leafPID follows pid's only child down while there is exactly one: the broker under
// `ip netns exec` and `sh -c`. 0 when pid is gone.
func leafPID(pid int) int {
	for range 8 {
		kids := children(pid)
		if len(kids) != 1 {
			return pid
		}
		pid = kids[0]
	}
	return pid
}

func children(pid int) []int {
	var out []int
	for _, st := range child.Procs() {
		if st.PPID == pid {
			out = append(out, st.PID)
		}
	}
	return out
}
