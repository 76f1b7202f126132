// Package result owns mqblast's result document, schema mqblast.result/v1: the Result type
// and everything in it, its JSON form, and what is computed on documents — the merge of
// shards, the thresholds judged on a document, the checks that documents are the shards of
// one run.
//
// # What it owns
//
//   - The document (Result and its parts) and its JSON: indented by WriteJSON, histograms in
//     HdrHistogram V2 compressed form ("HISTF...", hdrhistogram-go's and HdrHistogram's
//     own), null when empty. Hist is the µs histogram (1 µs to 1 h, 3 significant digits;
//     2 in a client group's snapshot, NewGroupSnapshot) that runs record into and documents
//     carry, so shards merge exactly.
//   - Snapshot, the additive figures: counters, counts by cause and histograms that add
//     across event loops, processes, hosts and shards (Add). A run's total snapshot makes
//     its document (SetTotal: the counts, the totals by cause, percentiles from the
//     histograms, lost copies, broker_stalled, the errors of refused, failed and dropped
//     connections, failed reconnect attempts, and of a broker that acknowledged no QoS 1/2
//     message); worker processes stream one per interval (NewInterval makes an
//     interval's record of one).
//   - Merge: the shards' snapshots are added and the derived figures computed once from the
//     sum, never averaged; a result carries its snapshot (Result.Total), and a document read
//     back shows it in its fields. The figures that are not sums (rates over a window, the
//     client's per-connection costs, the start and the clocks) combine by their own rules.
//   - Join, what a part of a run (a worker, a shard) carries for the figures that need
//     every stream at once (in-flight copies, share-group duplicates, the publishers that
//     may be silent: SilentPublishers), with its sets
//     (Seqs, Cover); Merge and MergeParts join the parts' joins, bounded (JoinLimit) and
//     marked inexact past the bound.
//   - Thresholds (PATH OP NUMBER over the document's JSON form, k6 style): parsing, the
//     check that a path names a numeric field of the Result type, evaluation (a value
//     the document writes as null, such as an unknown expected, is unknown: it fails).
//   - Soak (NewSoak): a held load cut into windows, each window's figures from the
//     intervals, their slopes per hour, and the verdict by one rule (SoakRule), which the
//     outputs print in the same words.
//   - CheckShards: whether documents are the distinct shards of one run (one run
//     identity, one scenario, each shard once), and mergeable.
//   - CheckDocument: whether a document read back (ReadFile) can be a run's: counts and
//     percentiles not negative, percentiles in order, the accounting identities, each
//     problem named by its JSON path; a field the document lacks is not judged.
//
// # What it promises
//
// The schema keeps its name while fields are only added: a document written by any
// earlier writer of mqblast.result/v1 reads (fields it lacks read as zero), is written
// again as that writer wrote it again, and merges as that writer merged it (testdata/v1
// holds such documents and what commit 97f72b7 made of them). Percentiles always come from
// histograms. Merge and CheckShards do not change their inputs. Record on a Hist does not
// allocate once its counts exist; Reset after at most a few hundred values gives the
// counts to a pool, from which the next Hist of that precision to need counts takes them.
//
// # What it must not do
//
// It imports none of the run's packages (bench, reactor, scenario, tuning): report and
// report/metrics read documents through it alone. Where the document holds what those
// packages produce (a network profile's paths, the kernel's findings), it has its own type
// with the same JSON, and the producer converts. It does no I/O beyond the writers and
// readers it is given, measures nothing and prints nothing.
package result
