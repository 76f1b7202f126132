// Package spec describes one run of mqblast as one value, end to end: the scenario and the
// changes made to it, the brokers (or the sink), the source addresses, the duration or the
// stages, the shard, the start instant and the run's identity, the processes and loops,
// TLS, where the password comes from, the network profile, what of the broker is watched,
// the thresholds, the host check, the outputs, and the search for the broker's limit when
// the run is one.
//
// A Spec is data. Its JSON form (schema mqblast.spec/v1, snake_case, the names of the
// command line's flags) is what the command line makes from its flags, what `mqblast run
// --spec FILE` reads, what a worker process, the run in the packet emulator's namespace and
// a study's cell receive instead of a command line, and what every result document
// records in its "spec" field, so that any run can be repeated from its result. Validate
// checks what can be checked without a scenario or a host; its errors (Error) name the
// Spec's JSON fields, and the command line names its flags instead.
//
// It promises that a Spec holds paths and names, never key material or a password: the
// broker password comes from PasswordFile, the scenario, or the environment, and where a
// Spec carries the scenario file itself or a change of a secret field, the value is the
// marker that stands for the password in the environment.
//
// It must not import an engine: it imports nothing of mqblast's.
package spec
