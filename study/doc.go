// Package study runs broker studies: a campaign of brokers × scenarios (with sweeps of
// their fields) × network profiles × repetitions, cell by cell, into one directory with one
// index and one comparison report.
//
// # Campaign
//
// A campaign is a JSON file (or a built-in: BuiltinNames, Resolve) that Load or Parse
// decodes and validates entirely before anything runs: syntax, unknown fields (with a
// suggestion), types and values, and every distinct cell's scenario with its "set" and
// "sweep" values applied (scenario.Set, Validate, NewPlan). Each problem is an *Error with
// the file and its JSON path ("scenarios[0].sweep.parameters.payload_size[2]: ..."),
// joined; Errors splits them.
//
//	{
//	  "name": "retain",
//	  "brokers": [
//	    {"name": "mosquitto", "type": "mosquitto"},
//	    {"name": "embedded", "type": "embedded"},
//	    {"name": "sink", "type": "sink"},
//	    {"name": "mine", "start": "/opt/b/run --port {port}", "stop": "/opt/b/stop", "cgroup": "/system.slice/b.service"},
//	    {"name": "prod", "address": "10.0.0.5:1883", "restart": "ssh b systemctl restart mosquitto", "pid": 0,
//	     "metrics": ["http://10.0.0.5:9100/metrics", "http://10.0.0.5:9256/metrics"]}
//	  ],
//	  "scenarios": [{"scenario": "quick-p2p-100", "label": "p2p",
//	                 "set": {"parameters.publish_rate": 50},
//	                 "sweep": {"publishers.retain": [false, true], "parameters.payload_size": "1KB,10KB"}}],
//	  "profiles": ["local", "optimal", "delay=2ms,jitter=0.4ms,loss=0.03%"],
//	  "repetitions": 3, "duration_sec": 5, "warmup_sec": 1, "pause_sec": 1,
//	  "order": "interleaved", "restart": "each-cell"
//	}
//
// Broker types: external (a running broker at address), command (start is a /bin/sh
// command), embedded (mqblast broker), mosquitto (started with a config the study writes),
// rabbitmq (3.10's MQTT plugin), aedes (1.x on Node.js) and gmqtt (gmqttd), each with the
// configuration and directories internal/brokers writes into the broker's directory in
// the study, sink (mqblast sink). A campaign naming a rabbitmq, aedes or gmqtt broker that
// is not installed is refused before anything runs (CheckInstalled), with the command that
// installs it; they wait, by default, 90 s (RabbitMQ) or 30 s for the broker to answer a
// CONNECT (start_timeout_sec), the others 15 s for it to accept a connection. In commands {port} is a free port the study picks, {addr}, {host},
// {mqblast} (this binary), {dir} (the broker's directory in the study) and {conf}. A
// broker's "metrics" are its host's Prometheus endpoints and "metric" other series to
// record from them: each cell gets them as --broker-metrics and --broker-metric, so the
// study's tables show a remote broker's CPU and memory as they show a local one's.
// Profiles are tuning.ParseProfile's: names or delay/jitter/loss items.
//
// # Running
//
// Run expands the cells (Campaign.Cells: scenario, sweep values, profile, broker,
// repetition) and runs them interleaved: repetition 1 of every cell, then repetition 2 ...,
// the brokers alternating within a round; "order": "shuffled" shuffles each round from a
// seed recorded in the index. Each cell is a run.Spec written to DIR/cells/cNNNN.spec.json
// (the study's base Spec, Options.Base, with the cell's scenario and sets, its broker, no
// host check, its result as JSON in DIR/cells/cNNNN.json, and the broker watched: cgroup,
// endpoints, the pid the study sampled), run as its own process by the command the caller
// gives (Options.Command: mqblast run --spec FILE): a cell that crashes or hangs (it is
// killed past twice its scenario's time plus a minute) cannot take the study down, every
// cell starts with a fresh process, and the Spec and command recorded for the cell are
// those that ran. A broker the study starts is started before each cell (and waited for
// until it accepts TCP connections) and stopped after it (SIGTERM to its process group, or
// its stop command); one with a restart command gets it before each cell; "restart": "never"
// keeps one broker for the whole study. The process sampled is the broker's pid option, the
// listener on its port, or what the study started. Nothing outlives a killed study
// (internal/child): each cell is tied to it, and each broker it starts runs under `mqblast
// guard` (Options.Exe), which ends the broker's process group when the study dies.
//
// A password a cell's sets give (server.password; it cannot be swept) reaches its run through
// $MQBLAST_PASSWORD; the cell's Spec, and so its file, study.json, study.html, its log, the
// dry run and the reproduce line, show the marker (server.password=<redacted>), which the
// run reads as "the one in $MQBLAST_PASSWORD". study.json's campaign shows the marker
// too. A broker the study starts does not get the variable.
//
// A cell fails — its error is recorded and the study goes on — when its broker does not
// start, goes away during the cell (killed, crashed), its run exits non-zero (5, a threshold,
// is recorded as "threshold"), or its profile cannot be applied. The host is checked by the
// caller once (cmd/mqblast: for the cell with the most connections), its findings kept in
// the index. When the context ends, the running cell gets SIGINT (it writes its partial
// result), is recorded as interrupted, the index and the report are written, and Run returns
// ErrInterrupted. Run on a directory that holds an index of the same campaign resumes: the
// cells done (ok, threshold, and failed unless Options.RetryFailed) keep their records and
// results and are not run again. Progress lines (cell k of n, its outcome, ETA) go to
// Options.Progress.
//
// # Network profiles
//
// A campaign with a profile other than local runs every cell behind tuning/netemu's packet
// emulator: one link for the study, its profile set per cell (Link.SetProfile); the brokers
// the study starts run in the broker namespace (under ip netns exec), each cell's client in
// the client namespace, local cells included (the zero profile through the same emulator, so
// that two profiles differ by the profile alone). The emulator's counters per cell (frames,
// the profile's losses, drops it did not ask for, its CPU per frame) go into the cell's
// record. There {addr} and {host} are the broker namespace's address (10.211.0.1), not
// loopback, so a start command must listen on {addr} and accept a non-loopback address
// (the embedded broker and the sink are started so; for the sink by a command of your own:
// --allow-remote). An external broker cannot be put behind it: its cells under a non-local profile
// fail with that reason; nothing pretends a profile was applied. This needs root and ip(8).
// netem on the path (tuning.PlanNetem, where the kernel has sch_netem) is not used yet.
//
// # Outputs
//
// DIR/cells/cNNNN.json (the result document of each cell, result.Result), cNNNN.log (its
// stderr, headed by the reproduce line), DIR/brokers/NAME/ (config, log), DIR/study.json
// (Index: the campaign, the brokers, every cell's parameters, status, error, result, argv
// and reproduce line), and DIR/study.html (WriteReport): per scenario and sweep value, latency
// boxplots with one row per network profile and broker (the repetitions' histograms added;
// report.Box, report.BoxplotSVG), throughput bars (median of the repetitions, whisker lowest
// to highest), and a table of every cell: median, p25, p75, IQR, p99, throughput, losses,
// the broker's CPU and RSS (broker_process), the client's saturation, the emulator's losses,
// and the reproduce command. The page is self-contained. Each scenario and sweep value also
// has a summary table, one row per profile and broker (the repetitions' histograms added:
// median, p25, p75, IQR, p99; the median and range of the receive rates; losses; the
// medians of the broker's CPU % and RSS peak), in the page and in DIR/summary.md.
//
// study imports scenario (cells' plans), run/spec (cells' Specs), result (result
// documents), report (box statistics and SVG), tuning (profiles, the process listening on
// a port), tuning/netemu, and internal helpers (child, brokers, fail, secret, strictjson,
// termtext, textdist, atomicfile). Main is the study verb's body; its errors say their
// kind (internal/fail). It prints only to the writers it is given and never exits the
// process, and it builds no command line but the caller's (Options.Command) for its cells.
package study
