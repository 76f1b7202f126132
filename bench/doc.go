// Package bench owns the run and its measurement: the phases (connect, subscribe, warm-up,
// measure window, drain, disconnect), the mapping of a scenario plan onto the engine, one
// recorder per event loop (HdrHistograms of connect latency, message latency from the due
// time and from the write time, schedule lag; counters; the received set of every
// (subscriber, publisher) stream) filling interval snapshots (result.Snapshot) that add
// exactly across loops, processes and hosts, the client's saturation verdict, and the
// worker-process protocol behind --procs. The result document it fills, its merge and its
// thresholds are package result's; the text summary is package report's; the watch of the
// host and the broker is package watch's.
//
// # Measuring honestly
//
// Latency runs from the time a message was due on its publisher's open-loop schedule, so
// a late send caused by a slow broker is counted (coordinated omission corrected); raw
// latency from the actual write is kept beside it for payloads of 24 bytes and more.
// Percentiles always come from merged histograms, never from averaged percentiles.
//
// Every scheduled message is accounted for: scheduled = published (written to the socket)
// + unsent (by cause, from the reactor). Every expected copy too: each stream a receiving
// client sees is classified once by the plan (scenario.Plan.Stream); copies on expected
// streams go into the stream's received set (sorted ranges: duplicates and late arrivals are
// exact), the others are unexpected by kind, a copy whose header carries another run's tag
// other_run (unless AnyRun: a Subscribe run not told its publishers' identity), payloads
// without mqblast's header or with an implausible due time unmeasured, and neither offsets
// a loss. A stream of a publisher that cycles over topics read by different subscribers
// takes the messages of the topics that reach its client (scenario.Plan.StreamCycle) and
// numbers them in order (result.Cycle), so the others are no gap in it; each message's
// expected copies are its topic's, as the reactor reports them. After the run, Recorder.Finish
// joins the publishers' messages still in flight (or dropped with a session) with the
// received sets, so that expected = received + lost + in_flight_at_end + in_flight_lost.
// A part of a run (a worker process, a shard: Placement) joins its own streams and leaves
// in its result what crosses parts (result.Join: its publishers' in-flight messages with
// receivers outside, what its streams received of other parts' publishers, its share
// groups' sets); Gather and result.Merge join those, so that workers and shards give what
// one process gives. A Point-To-Point part, whose pairs share a shard, leaves nothing.
//
// The client is saturated (client.saturated) only on its own evidence: its CPU near its
// cores' limit, or lateness of its own (schedule lag excludes the time the broker held a
// publisher). Holds by the broker — full in-flight windows, a socket it does not read, no
// connection — are broker_stalled, with publisher-seconds by kind. Lateness can also be the
// host's: the time the client's threads waited for a CPU over the window
// (client.run_delay_s, from schedstat) is measured, and a lag verdict names it when it is
// 5 % of the window or more; the hypervisor's steal is a kernel finding (cpu_steal_ticks).
// Intervals carry their own schedule lag, so a verdict can be placed in time.
//
// # Stages
//
// A staged run (Runner.Stages, the scenario's parameters.stages) gives the engine its rate
// profile before publishing starts (reactor.Engine.SetRate: the schedule is built at the
// peak rate and scaled to each stage's), aligns its intervals to the start of publishing,
// and marks each interval with its stage and what the schedule made due in it
// (Engine.ScheduledBefore). The result's stages are summarised from the marked intervals
// (result.Result.SummarizeStages).
//
// A steerable run (Runner.Steerable, the live API's) has stages too: its plan's one rate as
// stage 0 when it has none of its own. Runner.Steer changes the rate at an interval boundary
// while it publishes, ending the stage that holds the boundary there and starting one of
// the new rate (0: a pause) with its source; the parent of worker processes keeps the same
// stages (StagePlan) and tells each worker the change and its instant (WriteSteer,
// ReadSteers).
//
// # Worker processes
//
// A worker process (a Runner with a StartGate, and a HoldGate for a Connections run) aligns
// its intervals to the gate's instant, which the parent gives every worker alike (Gather:
// the first whole second startDelay ahead, unless told when), and numbers them by their
// slot after it: the workers' intervals end together (each tick is set for the next whole
// interval from that instant, so one taken late, its process short of CPU, shortens the
// next interval rather than moving every later end) and the parent merges each instant's
// together, woken once an interval for all their lines, on the second at which the
// engines' clocks tick their keepalives. A Connections run holds with one P per event
// loop (GOMAXPROCS, given back at the end): a held loop wakes a few times a second, and a
// spare P makes the runtime's sysmon poll for 10 ms after each of those wakes.
//
// # Watching the host
//
// The process that prints the intervals drives the watch of the host and the broker
// (package watch; Runner.Watch, GatherOptions.Watch): Start when the run's intervals begin,
// Interval on each interval before its line is printed, Finish on the finished result.
// Worker processes leave it to their parent.
//
// # What it must not do
//
// It prints only through the writers it is given and never exits: cmd/mqblast does.
package bench
