#!/usr/bin/env bash
# bench-conn-curve: the cost of a connection as the count grows. For each size in SIZES,
# scripts/bench-1m.sh's run (mqblast run singlenode-conn-tcp-1M-5K --procs auto over 40
# source addresses against mqblast sink --procs auto, held HOLD) RUNS times, and beside it
# the keepalive floor (bin/floor keepalive: one PINGREQ and one PINGRESP per connection,
# system calls alone). Writes $OUT/conn-curve.json, a list of rows (one per size, medians
# over the runs, each run's figures in "runs") and prints the table.
#
# Per size: client and sink CPU per connection set-up (the connect phase alone: the client's
# CPU until the last CONNACK; the sink's from its first stats line to the first at the full
# count), client and sink CPU per held connection-second (the hold's whole intervals, every
# connection established, over connections x seconds) beside the floor's at the same
# keepalive, client and sink RSS per connection, kernel memory per connection (Slab + TCP
# pages), time to all connected, connect p50/p99/max, the kernel findings, and the host's
# load and steal over the size's runs.
#
# Parameters (environment): SIZES="10000 100000 300000 1000000", RUNS=3, HOLD=60s,
# KEEPALIVE=30 (seconds: the hold then sees about HOLD/KEEPALIVE pings per connection; the
# scenario's own is 300), RATE=5000, FLOOR_MAX=100000 (the floor holds at most this many
# connections, in processes of FLOOR_PER connections each: a process holds 2 descriptors
# per connection), OUT=results; bench-1m.sh's (BIND, ADDRS, PORT, SINK_ARGS, TUNE, BIN).
# Small try: SIZES="10000 20000" RUNS=1 HOLD=20s make bench-conn-curve
set -euo pipefail
cd "$(dirname "$0")/.."
SIZES=${SIZES:-10000 100000 300000 1000000}
RUNS=${RUNS:-3}
HOLD=${HOLD:-60s}
KEEPALIVE=${KEEPALIVE:-30}
FLOOR_MAX=${FLOOR_MAX:-100000}
OUT=${OUT:-results}
FLOOR=${FLOOR:-./bin/floor}
CGO_ENABLED=0 ${GO:-go} build -trimpath -o "$FLOOR" ./internal/cmd/floor
hard=$(ulimit -Hn)
FLOOR_PER=${FLOOR_PER:-$(( (hard - 100) / 2 ))}
mkdir -p "$OUT"
steal() { awk '/^cpu /{print $9}' /proc/stat; }
for n in $SIZES; do
  d="$OUT/curve-$n"
  mkdir -p "$d"
  echo "== bench-conn-curve: $n connections, $RUNS run(s), hold $HOLD, keepalive ${KEEPALIVE}s" >&2
  s0=$(steal); t0=$(date +%s)
  N=$n RUNS=$RUNS HOLD=$HOLD OUT=$d EXTRA="--set parameters.keep_alive_sec=$KEEPALIVE" \
    scripts/bench-1m.sh > "$d/table.md" || echo "bench-conn-curve: bench-1m at $n exited $? (see $d)" >&2
  s1=$(steal); t1=$(date +%s)
  echo "steal_ticks $((s1 - s0)) wall_s $((t1 - t0)) loadavg $(cut -d' ' -f1-3 /proc/loadavg) ticks_per_s $(getconf CLK_TCK) cores $(nproc)" > "$d/host.txt"
  # The floor at this size: FLOOR_PER connections a process, the processes side by side.
  fn=$(( n < FLOOR_MAX ? n : FLOOR_MAX ))
  procs=$(( (fn + FLOOR_PER - 1) / FLOOR_PER ))
  pids=()
  for p in $(seq 1 "$procs"); do
    per=$(( fn / procs ))
    "$FLOOR" keepalive --connections "$per" --rounds 10 > "$d/floor-$p.json" & pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || echo "bench-conn-curve: a keepalive floor process failed (see $d/floor-*.json)" >&2; done
done

PYTHONPATH=scripts python3 - "$OUT" "$RUNS" "$KEEPALIVE" $SIZES <<'PY'
import glob, json, statistics, sys
from lib_1m import rss
out, runs, keepalive, sizes = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), [int(s) for s in sys.argv[4:]]

def run_row(d, n, r):
    try:
        res = json.load(open(f"{d}/1m-run-{r}.json"))
    except Exception as e:
        print(f"{n} run {r}: no result ({e})", file=sys.stderr); return None
    lines = [json.loads(l) for l in open(f"{d}/1m-sink-{r}.jsonl") if l.startswith("{")]
    km = [l.split() for l in open(f"{d}/1m-kmem-{r}.txt")]
    before = dict(zip(km[0][0::2], map(float, km[0][1::2])))
    samples = [list(map(float, s[2:5])) for s in km[1:] if len(s) == 5]
    c, cl = res["connections"], res["client"]
    est = c["established"]
    row = dict(run=r, established=est, failed=c["failed"], time_to_all_connected_s=c["connect_phase_s"],
               connect_p50_us=c["connect_latency_us"]["p50"], connect_p99_us=c["connect_latency_us"]["p99"],
               connect_max_us=c["connect_latency_us"]["max"],
               client_cpu_per_setup_us=cl["cpu_per_connect_us"], client_rss_per_connection_bytes=cl["rss_per_connection_bytes"],
               client_procs=res["host"]["procs"],
               kernel_findings=[f"{f['counter']} +{f['delta']} ({f['where']}): {f['meaning']}" for f in (res.get("kernel") or {}).get("findings") or []])
    # The client's hold: its whole intervals after the connect phase with every connection
    # established, the last (partial, with the disconnects) left out.
    iv = res["intervals"]
    cpu = secs = held = 0.0
    for prev, cur in zip(iv, iv[1:-1]):
        if prev["t_s"] >= c["connect_phase_s"] + 0.5 and cur["established"] >= est > 0:
            dt = cur["t_s"] - prev["t_s"]
            cpu += cur["client_cpu_percent"] / 100 * dt; secs += dt; held += cur["established"] * dt
    row["hold_s"] = secs
    row["client_cpu_per_held_conn_s_us"] = cpu * 1e6 / held if held else None
    # The sink: set-up from its first line to the first at its peak; the hold from there
    # (plus one line) to the last line at the peak.
    if lines:
        peak = max(l["connections"] for l in lines)
        first = lines[0]
        i_peak = next(i for i, l in enumerate(lines) if l["connections"] >= peak)
        at = lines[i_peak]
        row["sink_cpu_per_setup_us"] = (at["cpu_s"] - first["cpu_s"]) * 1e6 / max(at["connections_total"] - first["connections_total"], 1)
        row["sink_rss_per_connection_bytes"] = (rss(at) - rss(first)) / max(peak, 1)
        last = max(i for i, l in enumerate(lines) if l["connections"] >= peak and not l.get("final"))
        a, b = lines[min(i_peak + 1, last)], lines[last]
        dt = b["t_s"] - a["t_s"]
        row["sink_cpu_per_held_conn_s_us"] = (b["cpu_s"] - a["cpu_s"]) * 1e6 / (peak * dt) if dt > 0 else None
        row["sink_procs"] = at.get("procs")
    if samples:
        top = max(samples, key=lambda s: s[0] + s[1])
        row["kernel_memory_per_connection_bytes"] = (top[0] - before["slab_before"] + top[1] - before["tcpmem_before"]) / max(est, 1)
    return row

rows = []
for n in sizes:
    d = f"{out}/curve-{n}"
    rs = [x for x in (run_row(d, n, r) for r in range(1, runs + 1)) if x]
    if not rs:
        continue
    def med(k):
        v = [x[k] for x in rs if x.get(k) is not None]
        return statistics.median(v) if v else None
    row = {"connections": n}
    for k in ["established", "failed", "client_cpu_per_setup_us", "sink_cpu_per_setup_us",
              "client_cpu_per_held_conn_s_us", "sink_cpu_per_held_conn_s_us",
              "client_rss_per_connection_bytes", "sink_rss_per_connection_bytes",
              "kernel_memory_per_connection_bytes", "time_to_all_connected_s",
              "connect_p50_us", "connect_p99_us", "connect_max_us", "hold_s"]:
        row[k] = med(k)
    fl = [json.load(open(f)) for f in sorted(glob.glob(f"{d}/floor-*.json")) if open(f).read().strip()]
    if fl:
        w = sum(f["connections"] for f in fl)
        cp = sum(f["client_cpu_per_ping_us"] * f["connections"] for f in fl) / w
        sp = sum(f["server_cpu_per_ping_us"] * f["connections"] for f in fl) / w
        row["keepalive_s"] = keepalive
        row["floor"] = {"connections": w, "processes": len(fl), "client_cpu_per_ping_us": cp, "server_cpu_per_ping_us": sp,
                        "client_cpu_per_held_conn_s_us": cp / keepalive, "sink_cpu_per_held_conn_s_us": sp / keepalive}
    host = dict(zip(*[iter(open(f"{d}/host.txt").read().split())] * 2)) if glob.glob(f"{d}/host.txt") else {}
    if host:
        busy = float(host["wall_s"]) * float(host["ticks_per_s"]) * int(host["cores"])
        row["host"] = {"steal_percent": 100 * float(host["steal_ticks"]) / busy if busy else None,
                       "loadavg_1m_after": float(host["loadavg"])}
    row["kernel_findings"] = sorted({f for x in rs for f in x["kernel_findings"]})
    row["runs"] = rs
    rows.append(row)
json.dump(rows, open(f"{out}/conn-curve.json", "w"), indent=1)

def f(v, fmt):
    return "—" if v is None else fmt.format(v)
print(f"\nbench-conn-curve: medians of {runs} run(s) per size; CPU per held connection-second at keepalive {keepalive:.0f} s beside the floor's")
print("| connections | client CPU/set-up µs | sink CPU/set-up µs | client CPU/held conn-s µs (floor) | sink CPU/held conn-s µs (floor) "
      "| client RSS/conn B | sink RSS/conn B | kernel mem/conn B | to all connected s | connect p50/p99/max ms | steal % |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for r in rows:
    fl = r.get("floor", {})
    print(f"| {r['connections']:,} | {f(r['client_cpu_per_setup_us'], '{:.1f}')} | {f(r['sink_cpu_per_setup_us'], '{:.1f}')} "
          f"| {f(r['client_cpu_per_held_conn_s_us'], '{:.3f}')} ({f(fl.get('client_cpu_per_held_conn_s_us'), '{:.3f}')}) "
          f"| {f(r['sink_cpu_per_held_conn_s_us'], '{:.3f}')} ({f(fl.get('sink_cpu_per_held_conn_s_us'), '{:.3f}')}) "
          f"| {f(r['client_rss_per_connection_bytes'], '{:.0f}')} | {f(r['sink_rss_per_connection_bytes'], '{:.0f}')} "
          f"| {f(r['kernel_memory_per_connection_bytes'], '{:.0f}')} | {f(r['time_to_all_connected_s'], '{:.1f}')} "
          f"| {f(r['connect_p50_us'] and r['connect_p50_us']/1000, '{:.1f}')}/{f(r['connect_p99_us'] and r['connect_p99_us']/1000, '{:.1f}')}/"
          f"{f(r['connect_max_us'] and r['connect_max_us']/1000, '{:.0f}')} | {f(r.get('host', {}).get('steal_percent'), '{:.1f}')} |")
for r in rows:
    for k in r["kernel_findings"]:
        print(f"{r['connections']:,}: KERNEL {k}")
print(f"\nwrote {out}/conn-curve.json")
PY
