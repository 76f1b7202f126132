// Package run performs a run: Do takes a Spec (package run/spec: one value that describes
// the run end to end) and owns the recipe, in this order: read the scenario (a file, a
// built-in, or the file's JSON in the Spec), change it as the Spec says, check the
// thresholds and set the password, prepare the search for the broker's limit when there is
// one, plan it once, shard it, choose the processes, check the host, serve the outputs,
// put the network profile around the run (tc netem, or the packet emulator's namespaces:
// package network), start the embedded broker or the sink when the Spec names no broker,
// execute it here or in worker processes (or search for the limit on one engine), judge a
// soak's hold when the Spec sustains the load (a search's answer held after it, or a
// fixed-rate run's measure phase), judge the thresholds and write the result with the Spec
// it ran. Plan stops after the plan,
// running nothing; Validate is the validate verb's body; Needs and PreflightLargest are
// what the check verb and a study ask of a plan.
//
// Its child processes are its own binary's hidden verb ChildVerb, given their part (the
// Spec, and what they are: a worker's part of the plan, or the run in the emulator's client
// namespace) as an envelope on their descriptor 3, from a file that has no name once
// written: no flag is built for them, and the broker password reaches them only through
// their environment (PasswordEnv).
//
// It promises that the result of a run in worker processes is the same document as one run
// in this process (merged by bench.Gather), that every child process it starts is stopped
// before Do returns and ends when this process is killed (internal/child: tied to it, and a
// broker behind the packet emulator under the guard), that no file is left behind, that the
// result records the Spec it ran (the scenario file's JSON in it, every password the
// marker) so that the run can be repeated from it, and that the broker password never
// reaches an argv, a Spec, a result or a log.
//
// Its errors say what kind of failure they are (internal/fail; a Spec's problem is a
// *spec.Error naming the field); the command line maps them to exit codes and its flags.
// It writes notices and progress only to the writers of its IO, never reads flags or
// os.Args, and never exits.
package run
