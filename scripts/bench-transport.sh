#!/usr/bin/env bash
# bench-transport: the client's CPU per message on each transport (reactor's
# BenchmarkTransportReceive and BenchmarkTransportPublish: tcp, ws, tls and wss on tls.Conn,
# tls-loop and wss-loop on the loop's record layer), each measurement in a fresh process, the
# transports interleaved, ROUNDS rounds; then BenchmarkTLSRebuild. A shared host's other work
# lands on whichever measurement it meets: interleaving spreads it over every transport, where
# one process's -count runs give the later ones the garbage of the earlier. Prints the raw
# benchmark lines (benchstat reads them) to OUT, then the medians and the ratios to tcp.
# Usage: scripts/bench-transport.sh [ROUNDS] (env: BENCHTIME OUT GO)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-6}
BENCHTIME=${BENCHTIME:-1000000x}
OUT=${OUT:-bench-tls.txt}
bin=$(mktemp)
trap 'rm -f "$bin"' EXIT
${GO:-go} test -c -o "$bin" ./reactor
: > "$OUT"
for r in $(seq 1 "$ROUNDS"); do
  echo "round $r/$ROUNDS" >&2
  for bn in Receive Publish; do
    for tr in tcp ws tls tls-loop wss wss-loop; do
      (cd reactor && "$bin" -test.run '^$' -test.bench "Transport$bn/$tr\$" -test.benchtime "$BENCHTIME") | grep '^Benchmark' >> "$OUT"
    done
  done
done
(cd reactor && "$bin" -test.run '^$' -test.bench 'TLSRebuild' -test.benchtime "$BENCHTIME" -test.count "$ROUNDS") | grep '^Benchmark' >> "$OUT"
python3 - "$OUT" <<'PY'
import collections, re, statistics, sys
runs, allocs = collections.defaultdict(list), {}
for line in open(sys.argv[1]):
    m = re.match(r'(Benchmark\S+?)(-\d+)?\s+\d+\s+[\d.]+ ns/op\s+([\d.]+) cpu-ns/\S+.*?(\d+) allocs/op', line)
    if m:
        runs[m.group(1)].append(float(m.group(3)))
        allocs[m.group(1)] = m.group(4)
for bn in ("Receive", "Publish"):
    tcp = statistics.median(runs[f"BenchmarkTransport{bn}/tcp"])
    for tr in ("tcp", "ws", "tls", "tls-loop", "wss", "wss-loop"):
        k = f"BenchmarkTransport{bn}/{tr}"
        m = statistics.median(runs[k])
        print(f"{bn:8s} {tr:9s} {m:7.1f} cpu-ns/msg  {m / tcp:4.2f} x tcp  {allocs[k]} allocs  runs {sorted(runs[k])}")
for k in ("BenchmarkTLSRebuild/warm", "BenchmarkTLSRebuild/rebuilt"):
    print(f"{k[9:]:18s} {statistics.median(runs[k]):7.1f} cpu-ns  {allocs[k]} allocs")
PY
