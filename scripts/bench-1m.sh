#!/usr/bin/env bash
# bench-1m: a million MQTT connections on one host (issue 11, headline run 1). One
# `mqblast run singlenode-conn-tcp-1M-5K --procs auto` over 40 source addresses
# (127.0.0.2-127.0.0.41) against `mqblast sink --procs auto` on 127.0.0.1, held HOLD with
# keepalive, then disconnected; `mqblast check` first (and `mqblast tune apply` when TUNE=1
# and it fails). RUNS times; prints a table of medians and, when a run fell short, the limit
# that stopped it with its numbers.
#
# Parameters (environment): N=1000000 connections, RATE=5000 per second, HOLD=60s, RUNS=3,
# BIND=127.0.0.2-127.0.0.41, ADDRS=40 (the count in BIND), PORT=18830 (the sink's),
# SINK_ARGS (more flags for mqblast sink, e.g. "--max-connections 500000"), EXTRA (more
# flags for mqblast run, e.g. "--set parameters.keep_alive_sec=30"),
# SCHEME (the broker URL's scheme with its "://", e.g. mqtts:// with a TLS sink's SINK_ARGS),
# TUNE=1 as root, else 0 (1: apply the fixes check prints with mqblast tune apply), OUT=results.
# Small try: N=20000 RUNS=1 HOLD=10s make bench-1m
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-1000000}
RATE=${RATE:-5000}
HOLD=${HOLD:-60s}
RUNS=${RUNS:-3}
BIND=${BIND:-127.0.0.2-127.0.0.41}
ADDRS=${ADDRS:-40}
PORT=${PORT:-18830}
TUNE=${TUNE:-$([ "$(id -u)" = 0 ] && echo 1 || echo 0)}
OUT=${OUT:-results}
BIN=${BIN:-./bin/mqblast}
mkdir -p "$OUT"
# shellcheck source=scripts/lib-1m.sh
. scripts/lib-1m.sh
hard=$(ulimit -Hn)
sinkpid=
sampler=
cleanup() {
  sampler_stop
  sink_stop
  wait 2>/dev/null || true
}
trap cleanup EXIT

host_check 1m "$N"

for r in $(seq 1 "$RUNS"); do
  echo "== run $r/$RUNS: $N connections at $RATE/s over $BIND to mqblast sink --procs auto on ${SCHEME:-}127.0.0.1:$PORT, hold $HOLD" >&2
  # shellcheck disable=SC2086 # SINK_ARGS is a list of flags
  sink_start "$OUT/1m-sink-$r" "$N" ${SINK_ARGS:-}
  sampler_start "$OUT/1m-kmem-$r.txt"
  code=0
  # shellcheck disable=SC2086 # EXTRA is a list of flags
  $BIN run singlenode-conn-tcp-1M-5K --set publishers.client_count="$N" --set parameters.connection_rate="$RATE" \
    --broker "${SCHEME:-}127.0.0.1:$PORT" --bind "$BIND" --procs auto --duration "$HOLD" --no-check \
    --out "$OUT/1m-run-$r.json" ${EXTRA:-} > "$OUT/1m-run-$r.txt" 2> "$OUT/1m-run-$r.err" || code=$?
  sampler_stop
  sink_stop
  tail -n 6 "$OUT/1m-run-$r.txt" >&2 || true
  [ "$code" = 0 ] || echo "run $r exited $code (see $OUT/1m-run-$r.err)" >&2
done

read -r plo phi < /proc/sys/net/ipv4/ip_local_port_range
PYTHONPATH=scripts python3 - "$OUT" "$N" "$RUNS" "$(nproc)" "$(( (phi - plo + 1) * ADDRS ))" "$hard" "$(awk '/^MemTotal:/{printf "%.0f", $2*1024}' /proc/meminfo)" <<'PY'
import json, statistics, sys
from lib_1m import figures
out, n, runs, cores = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
ports, fdlimit, memtotal = int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
rows = []
for r in range(1, runs + 1):
    try:
        res = json.load(open(f"{out}/1m-run-{r}.json"))
    except Exception as e:
        print(f"run {r}: no result ({e})"); continue
    f = figures(res, f"{out}/1m-sink-{r}.jsonl", f"{out}/1m-kmem-{r}.txt")
    rows.append(dict(f, run=r, res=res))
if not rows:
    sys.exit("bench-1m: no run produced a result")
def med(k): return statistics.median(r[k] for r in rows)
print(f"\nbench-1m: {n} connections, {len(rows)} run(s), {cores} cores; medians (runs)")
print("| figure | median | runs | goal |")
print("|---|---|---|---|")
def line(name, k, fmt, goal=""):
    print(f"| {name} | {fmt.format(med(k))} | {', '.join(fmt.format(r[k]) for r in rows)} | {goal} |")
line("established", "established", "{:.0f}", f"{n}, 0 failed")
line("failed", "failed", "{:.0f}", "0")
line("time to all connected (s)", "connect_s", "{:.1f}")
line("connect latency p50 (µs)", "p50", "{:.0f}")
line("connect latency p99 (µs)", "p99", "{:.0f}")
line("client RSS per connection (B)", "client_rss", "{:.0f}", "≤ 256")
line("sink RSS per connection (B)", "sink_rss", "{:.0f}", "≤ 1024")
line("client CPU per connection set-up (µs)", "client_cpu", "{:.1f}")
line("sink CPU per connection set-up (µs)", "sink_cpu", "{:.1f}")
line("kernel memory per connection (B, Slab + TCP pages)", "kernel", "{:.0f}")
# What stopped a run that fell short: the evidence, with numbers.
for r in rows:
    if r["established"] >= n and r["failed"] == 0:
        continue
    res, s = r["res"], r["sink"]
    why = []
    c = res["connections"]
    if c.get("failed_by_cause"): why.append(f"client connect failures by cause {c['failed_by_cause']}")
    if c.get("refused"): why.append(f"refused {c['refused']}")
    for e in res.get("errors") or []: why.append(f"error {e['kind']} x{e['count']} ({e['example']})")
    if res["host"].get("limited"): why.append(f"kernel limited: {res['host'].get('limited_evidence')}")
    if s: why.append(f"sink: at most {r['peak_open']} open in {s.get('procs')} processes, refused {s.get('refused')}")
    why.append(f"lowest MemAvailable {r['minavail']/2**30:.1f} of {memtotal/2**30:.1f} GiB")
    why.append(f"ports: {ports} local ports over the source addresses for {n} connections")
    if s: why.append(f"descriptors: {s.get('procs')} sink processes x {fdlimit} = {s.get('procs', 0) * fdlimit}; "
                     f"{res['host']['procs']} client processes x {fdlimit} = {res['host']['procs'] * fdlimit}")
    if res["client"].get("saturated"): why.append(f"client saturated: {res['client'].get('saturation_evidence')}")
    print(f"\nrun {r['run']} held {r['established']} of {n}: " + "; ".join(why))
PY
