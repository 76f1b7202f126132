// Package bench owns the run and its measurement: the phases (connect, subscribe, warm-up,
// measure window, drain, disconnect), the mapping of a scenario plan onto the engine, one
// recorder per event loop (HdrHistograms of connect latency, message latency from the due
// time and from the write time, schedule lag; counters; the sequence tracker of every
// (subscriber, publisher) stream), interval snapshots that add exactly across loops,
// processes and hosts, the worker-process protocol behind --procs, the merge of shards, and
// the result document (schema mqblast.result/v1) with its text summary, and the thresholds
// judged on it (PATH OP NUMBER over the document's JSON form, k6 style).
//
// # Measuring honestly (DESIGN.md §3)
//
// Latency runs from the time a message was due on its publisher's open-loop schedule, so
// a late send caused by a slow broker is counted (coordinated omission corrected); raw
// latency from the actual write is kept beside it for payloads of 24 bytes and more.
// Percentiles always come from merged histograms, never from averaged percentiles. When the
// client itself falls behind (schedule lag, CPU, write backlog) the result says so
// (client.saturated, with the evidence).
//
// # What it must not do
//
// It prints only through the writers it is given and never exits: cmd/mqblast does.
package bench
