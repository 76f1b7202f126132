// Package run performs a run of a scenario's plan: execute chooses among running it in this
// process, in worker processes (one shard of the plan each, dialing in turns as dialLanes
// sets, their results merged), against the embedded broker or a sink started in a child
// process, and Net puts a network profile
// (tc netem, or the packet emulator's namespaces) around it. Worker runs a worker's shard and
// speaks the worker protocol to its parent. The runner is built in one place, newRunner.
//
// It owns what a run needs besides the engine: the command line's changes to the scenario
// (changes, the password, thresholds), the checks of its inputs that need the host (source
// addresses, output files, descriptor limits and the host checks, the broker process to
// watch, TLS files), the start time of publishing (--start-at), the run's identity
// (--run-id, resolveRunID: handed to its workers, required of shards), the run's outputs
// (CSV, hlog, live metrics, HTML) and the result's records of how the run was made (shard,
// run, start, network, calibration, host checks). Launch runs a plan as the command starts it (processes,
// host check, outputs) and finisher.Finish writes its end (thresholds evaluated, result,
// outputs, HTML) and returns its outcome. It also holds the bodies of the verbs around a run:
// validate (ValidateAll), net show and net apply (ShowProfiles, Apply), net emulate and clear.
//
// It promises that the result of a run in worker processes is the same document as one run
// in this process (merged by bench.Gather), that every child process it starts is stopped
// before execute returns and ends when this process is killed (internal/child: tied to it,
// and a broker behind the packet emulator under the guard) and leaves no file behind (the
// workers' scenario has no name: they inherit it as /dev/fd/3), and that the broker password
// never reaches the argv or scenario file of a process it starts (workers, the run in the
// emulator's namespace: PasswordEnv), nor a password from the environment a run that gives
// no username (resolvePassword).
//
// Its errors say what kind of failure they are (errUsage, errInvalid, errNotReady,
// errThreshold, errInterrupted, a child's or worker's ExitStatus); the command maps them to
// exit codes. It writes notices and progress only to the writer it is given, and never
// reads flags, os.Args or exits: the command line it re-executes (in the emulator's client
// namespace) is given to it.
package run
