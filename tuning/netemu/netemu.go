package netemu

import (
	"errors"
	"net/netip"
	"time"

	"github.com/mqblast/mqblast/tuning"
)

// Config configures Start.
type Config struct {
	// Profile is the impairment between client and broker; the zero Profile is "local" (the
	// frames still pass through the emulator, so that a local cell costs what the others do).
	Profile tuning.Profile
	// ClientAddrs is how many addresses the client namespace gets (10.211.0.2 and on, in
	// 10.211.0.0/16), for runs that need more source ports than one address has; default 1,
	// at most MaxClientAddrs.
	ClientAddrs int
	// QueueFrames is how many frames each direction can hold waiting for their due time;
	// default 8192 (2 KiB each). A frame arriving at a full queue is dropped and counted.
	QueueFrames int
	// NormalPriority keeps the emulator thread in the normal scheduling class. By default it
	// asks for SCHED_FIFO (priority 10), so that on a busy host its timer wakes do not wait
	// behind other tasks and frames leave on time.
	NormalPriority bool
	// Seed seeds the jitter and loss random numbers; 0 picks one from the clock.
	Seed uint64
}

// MaxClientAddrs is the most client addresses a link has.
const MaxClientAddrs = 4096

// ErrUnsupported is returned by Start where the emulator cannot run (not Linux).
var ErrUnsupported = errors.New("netemu: the packet emulator needs Linux")

// The addresses inside the namespaces.
var (
	// BrokerAddr is the broker namespace's address.
	BrokerAddr = netip.MustParseAddr("10.211.0.1")
	// FirstClientAddr is the client namespace's first address.
	FirstClientAddr = netip.MustParseAddr("10.211.0.2")
)

// DirStats counts one direction's frames. Every frame read is in one of Sent, Lost,
// Overflow, SendErrors and Queued: Frames = Sent + Lost + Overflow + SendErrors + Queued,
// exactly once the emulator has stopped (Link.Close), within the frames of one wake while it
// runs (the counters are read one by one). KernelDrops are frames never read, not in Frames.
type DirStats struct {
	// Frames and Bytes are the frames read from the sender's side, whatever became of them.
	Frames uint64 `json:"frames"`
	Bytes  uint64 `json:"bytes"`
	// Sent frames went out on the receiver's side.
	Sent uint64 `json:"sent"`
	// Lost frames were dropped by the profile's loss.
	Lost uint64 `json:"lost"`
	// Overflow frames were dropped because the queue was full (Config.QueueFrames).
	Overflow uint64 `json:"overflow"`
	// KernelDrops are frames the kernel dropped at the AF_PACKET socket (receive buffer full):
	// loss the profile did not ask for. Non-zero means the emulator fell behind.
	KernelDrops uint64 `json:"kernel_drops"`
	// SendErrors are frames the kernel refused to send, or too long for a slot.
	SendErrors uint64 `json:"send_errors"`
	// Queued frames wait for their due time; once the emulator has stopped, those it never
	// sent.
	Queued uint64 `json:"queued"`
	// Late is the total time frames went out after their due time, and MaxLate the most.
	Late    time.Duration `json:"late_ns"`
	MaxLate time.Duration `json:"max_late_ns"`
	// ReadLag is the total time from the kernel's receive stamp of a frame to the emulator
	// reading it (its wake-up latency), and MaxReadLag the most. The delay counts from the
	// stamp, so this adds nothing to a delayed frame unless it exceeds the delay.
	ReadLag    time.Duration `json:"read_lag_ns"`
	MaxReadLag time.Duration `json:"max_read_lag_ns"`
}

// Stats is what the emulator did so far.
type Stats struct {
	// Up is client to broker, Down broker to client.
	Up   DirStats `json:"up"`
	Down DirStats `json:"down"`
	// Spin is the CPU time spent spinning on the clock for frames due within spinMax, and
	// Oversleep how much later than asked the thread's timed sleeps end (an average it wakes
	// early by).
	Spin      time.Duration `json:"spin_ns"`
	Oversleep time.Duration `json:"oversleep_ns"`
	// Realtime says whether the emulator thread runs under SCHED_FIFO.
	Realtime bool `json:"realtime"`
	// Wakes is how often the emulator thread woke up.
	Wakes uint64 `json:"wakes"`
	// CPU is the emulator thread's CPU time (its schedstat run time while it runs; user +
	// system of getrusage RUSAGE_THREAD once it ended).
	CPU time.Duration `json:"cpu_ns"`
}

// CPUPerFrame is CPU divided by the frames read in both directions; 0 before any.
func (s Stats) CPUPerFrame() time.Duration {
	n := s.Up.Frames + s.Down.Frames
	if n == 0 {
		return 0
	}
	return s.CPU / time.Duration(n)
}
