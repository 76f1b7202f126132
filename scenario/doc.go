// Package scenario owns what mqblast runs: scenario files, their validation, the built-in
// library, and the expansion of a scenario into a per-client plan.
//
// A scenario file is JSON in the format of xmq_scn, so that files written for it run
// unmodified (docs/scenario.md describes every field):
//
//	{
//	  "name": "Point-To-Point 50K", "type": "Point-To-Point", "comments": ["free text"],
//	  "publishers":  {"id_prefix": "test-publisher-", "protocol_version": 3, "client_count": 50000,
//	                  "qos": 1, "clean_session": true, "topics": "test/topic$clientindex"},
//	  "subscribers": {"id_prefix": "test-subscriber-", "protocol_version": 3, "client_count": 50000,
//	                  "qos": 1, "clean_session": true, "topics": "test/topic$clientindex"},
//	  "server":      {"hostname": "127.0.0.1", "port": 1883, "username": "", "password": ""},
//	  "parameters":  {"connection_rate": 5000, "duration_sec": 1800, "payload_size": 16,
//	                  "publish_rate": 1, "keep_alive_sec": 300, "max_inflight_messages": 1024,
//	                  "message_count": 0}
//	}
//
// mqblast adds optional fields, each with a default: a group's "retain",
// "connect_properties" and "publish_properties" (MQTT 5 only), "topics" as an array of
// filters, and the MQTT 5.0 subscription options of a subscribing group, "no_local" and
// "retain_as_published" (default false) and "retain_handling" (0, 1 or 2; default 0); the
// server's "brokers"; the parameters "warmup_sec", "drain_sec", "reconnect" ("off" or
// "backoff"), "payload" (literal text after the measurement bytes) and "bind" (source
// addresses); and "thresholds", pass/fail criteria of the run such as
// ["messages.lost==0", "latency_us.p99<50000"], whose paths bench checks against the result
// document. protocol_version 3 and 4 mean MQTT 3.1.1, 5 means MQTT 5.0 and the
// string "3.1" means MQTT 3.1. Topic templates hold $clientindex and $clientid.
//
// The type says who publishes and who receives: Point-To-Point, Fan-In, Fan-Out and
// Connections (xmq_scn's), Shared-Subscription and Round-Trip, and Publish and Subscribe
// for one-sided runs as emqtt-bench pub and sub make them: Publish has only a publisher
// group and expects no message back; Subscribe has only a subscriber group, publishes
// nothing, and receives what someone else publishes to its filters (see Types). Instead of
// a type and its two groups a file may list client groups ("groups", type Mixed), each
// with its behaviours (hold, publish, subscribe, round-trip, request, respond), size and
// settings (see ClientGroup).
//
// Whatever the file's form, a plan knows client groups only: a type is read as the groups
// it makes of the publishers and subscribers (Point-To-Point, Fan-In, Fan-Out and
// Shared-Subscription a subscribing group, whose filters are the subscribers' topics,
// and a publishing one; Round-Trip one round-trip group; Connections one that holds;
// Publish one that publishes for no client of the run; Subscribe one that subscribes),
// and one path derives every client, stream, estimate and description from the groups,
// and one set of rules validates them. A plan made from a plain file reports the run as
// one group (Plan.Groups is nil, Client.GroupID 0), so that its result has no groups
// section and its recorder looks no group up.
//
// The life of a scenario:
//
//	s, err := scenario.Resolve(arg)          // a file, or a built-in name (Builtin, Builtins)
//	err = s.Set("parameters.publish_rate", "10") // --set, typed
//	err = s.SetBrokers([]string{"b1:1883,b2:1883"}) // --broker
//	err = s.Validate()                       // every problem, one line each
//	plan, err := scenario.NewPlan(s)
//	shard := plan.Shard(i, n)                // --shard i/n
//	part := plan.Part(i, n, lanes)           // a worker process's shard, with its turn at dialing
//	c := shard.Client(k)                     // role, id, topic, filters, rate, phase, ...
//	e := shard.Estimate()                    // connections, fds, msgs/s, bytes/s, memory
//
// Every error names the file, the JSON path and the value, in one line:
//
//	fanout.json: parameters.publish_rate: -5 is not a rate (must be > 0)
//
// A Plan holds ranges of client indices, not clients: a client's id, topics, rate and phase
// are derived from its index when asked for, so that a plan of a million clients is built in
// microseconds and takes a few kilobytes (BenchmarkPlan).
//
// The package must not touch the network or read flags: the command line (cmd/mqblast)
// parses flags and passes their values in; interface names in "bind" are resolved by the
// caller (SetBind). Of mqblast's packages it imports codec (the protocol versions) and
// internal helpers only (strict JSON, suggestions, safe text, the password marker).
package scenario
