// Package tuning owns the host: it checks every kernel and process limit a run depends on
// (RLIMIT_NOFILE and whether it can be raised, fs.nr_open, fs.file-max, the local port range
// against the source addresses, TIME_WAIT, conntrack, listen backlogs, tcp_mem, transparent huge
// pages, swap, free memory, cores) and returns findings, each with its current value, the value
// the run needs, a verdict, one line on why it matters and the exact command that fixes it.
//
// Checks read, never guess: every value comes from /proc, /sys or getrlimit(2), under a root
// path that tests point at a fake tree. What a run needs is described by [Needs]; deriving it
// from a scenario plan is the caller's job, so tuning imports nothing of ours but a
// text helper (internal/countfmt).
//
// tuning must not change system settings unless the user explicitly asks to apply: [Apply] is
// the only function that writes, and only what [PlanChanges] listed; [RunCommands] runs the
// commands of a [NetemPlan] only when a caller that the user asked passes them. It does not print; callers
// pass the writer ([Report.WriteText]). Source-address helpers ([HostAddrs], [AddrBatch]) build
// the `ip` commands; running them is the caller's job.
//
// tuning also watches the host while a run goes: [ReadKernel] reads the network counters of
// one namespace (listen overflows, SYN retransmits, TCP memory, conntrack and softnet drops,
// receive-queue drops and pruning, retransmitted segments with the timeouts, fast
// retransmits, tail-loss probes and DSACKs behind them; with the client's, the host's CPU
// time and the hypervisor's steal from /proc/stat), [KernelCounters.Delta] turns two
// readings into what happened between them, and [KernelFindings] says which of those deltas
// matter, what they mean and what fixes them. Retransmissions get their cause where the
// counters tell it: probes answered by DSACKs are late ACKs (a receiver short of CPU; a
// [CPUWait] adds the client's own wait for a CPU), timeouts and fast retransmits no DSACK
// answered are loss, SYN retransmits a full listen queue, drops at a full receiver its
// buffers; only retransmissions none of these explains get the generic advice.
// [ReadProcess] and [ReadCgroup] sample a process's or a cgroup's CPU and memory;
// [FindListeners] finds the local process behind a TCP port (a local broker) in bounded time
// and memory, whatever the host's connections, and
// [SameNetNS] tells whether two processes share a namespace, so one reading serves both.
// Sampling is the caller's job; these only read.
//
// Network profiles: [ParseProfile] reads a named profile (local, optimal,
// typical, worst, cloud) or custom per-direction delay, jitter and loss into a [Profile],
// validated with errors that say what to write instead. [PlanNetem] turns a profile into the
// tc netem commands for the path to one broker address (egress, and ingress through an IFB
// device, both filtered to that address) and the commands that clear them; [NetemAvailable]
// probes, in a throw-away network namespace, whether this kernel has sch_netem and IFB.
// Where it has not, the subpackage tuning/netemu emulates the profile in user space between
// two network namespaces.
package tuning
