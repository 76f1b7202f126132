#!/usr/bin/env bash
# bench-fanout: the 2M msg/s fan-out (issue 11, headline run 2). fanout-20-1000-20-2M (20
# publishers x 100 msg/s QoS 0, 16-byte payload, 1,000 subscribers of test/#) for a measure
# window of MEASURE after WARMUP, against mqblast sink (`run --sink`, a calibration run: the
# client host's own ceiling) and against Mosquitto on loopback. RUNS times each; prints per
# target the medians of the received msg/s (whole window and the lowest interval), lost,
# client.saturated and the schedule lag p99, the client's CPU per received message and share of
# the cores, how long its threads waited for a CPU, the host's steal, and the
# broker's (sink's or Mosquitto's) CPU per received message.
#
# Parameters (environment): RUNS=3, MEASURE=60, WARMUP=10 (seconds), RATE=100 (per publisher),
# SUBS=1000, PUBS=20, TARGETS="sink mosquitto", PORT=18840 (Mosquitto's), OUT=results,
# SINK_FLUSH=0 (the sink's --flush-delay: e.g. 2ms batches more copies per write).
# Small try: RUNS=1 MEASURE=10 WARMUP=3 RATE=10 make bench-fanout
set -euo pipefail
cd "$(dirname "$0")/.."
SCENARIO=${SCENARIO:-fanout-20-1000-20-2M}
RUNS=${RUNS:-3}
MEASURE=${MEASURE:-60}
WARMUP=${WARMUP:-10}
RATE=${RATE:-100}
SUBS=${SUBS:-1000}
PUBS=${PUBS:-20}
TARGETS=${TARGETS:-sink mosquitto}
PORT=${PORT:-18840}
OUT=${OUT:-results}
BIN=${BIN:-./bin/mqblast}
SINK_FLUSH=${SINK_FLUSH:-0}
mkdir -p "$OUT"
mpid=
cleanup() { [ -n "$mpid" ] && kill "$mpid" 2>/dev/null || true; wait 2>/dev/null || true; }
trap cleanup EXIT
dur=$((MEASURE + WARMUP))
sets=(--set subscribers.client_count="$SUBS" --set publishers.client_count="$PUBS"
      --set parameters.publish_rate="$RATE" --set parameters.warmup_sec="$WARMUP")
for target in $TARGETS; do
  for r in $(seq 1 "$RUNS"); do
    f="$OUT/fanout-$target-$r"
    echo "== $target run $r/$RUNS: $SCENARIO, $PUBS x $RATE msg/s to $SUBS subscribers, ${WARMUP}s warm-up + ${MEASURE}s measured" >&2
    case $target in
      sink)
        $BIN run "$SCENARIO" --sink --sink-flush-delay "$SINK_FLUSH" "${sets[@]}" --duration "${dur}s" --procs 1 --out "$f.json" > "$f.txt" 2> "$f.err" || true ;;
      mosquitto)
        command -v mosquitto >/dev/null || { echo "bench-fanout: no mosquitto (apt-get install -y mosquitto); skipped" >&2; break; }
        printf 'listener %d 127.0.0.1\nallow_anonymous true\nmax_connections -1\nmax_queued_messages 0\npersistence false\nlog_dest none\n' \
          "$PORT" > "$OUT/fanout-mosquitto.conf"
        mosquitto -c "$OUT/fanout-mosquitto.conf" & mpid=$!
        sleep 1
        $BIN run "$SCENARIO" --broker "127.0.0.1:$PORT" --broker-pid "$mpid" "${sets[@]}" --duration "${dur}s" --procs 1 \
          --out "$f.json" > "$f.txt" 2> "$f.err" || true
        kill "$mpid"; wait "$mpid" 2>/dev/null || true; mpid= ;;
      *) echo "bench-fanout: unknown target $target (sink, mosquitto)" >&2; exit 2 ;;
    esac
    tail -n 8 "$f.txt" >&2 || true
  done
done

python3 - "$OUT" "$RUNS" "$(nproc)" "$PUBS" "$RATE" "$SUBS" $TARGETS <<'PY'
import json, statistics, sys
from datetime import datetime
out, runs, cores, pubs, rate, subs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
targets = sys.argv[7:]
def ts(s): return datetime.fromisoformat(s.replace("Z", "+00:00")[:26] + "+00:00" if "." in s else s.replace("Z", "+00:00")).timestamp()
goal = pubs * rate * subs
print(f"\nbench-fanout: {pubs} publishers x {rate:g} msg/s x {subs} subscribers = {goal:,.0f} msg/s expected; {cores} cores; medians (runs)")
print("| target | received msg/s | lowest interval | lost | out of order | latency p50 / p99 (µs, from due time) | saturated | schedule lag p99 (µs) | client CPU/msg (µs) | client share of cores | client waited for a CPU (s) | steal (% of host CPU) | broker CPU/msg (µs) |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for t in targets:
    rows = []
    for r in range(1, runs + 1):
        try:
            res = json.load(open(f"{out}/fanout-{t}-{r}.json"))
        except Exception:
            continue
        m, c = res["messages"], res["client"]
        k = (res.get("kernel") or {}).get("client") or {}
        t0, mf, mt = ts(res["started_at"]), ts(res["measure_from"]), ts(res["measure_to"])
        iv = [i["receive_per_s"] for i in res["intervals"] if i["t_s"] - 1.0 >= mf - t0 - 0.05 and i["t_s"] <= mt - t0 + 0.05]
        wall = ts(res["ended_at"]) - t0
        bp = res.get("broker_process") or {}
        rows.append(dict(rx=res["throughput"]["receive_per_s"], low=min(iv) if iv else float("nan"), lost=m["lost"],
            ooo=m["out_of_order"], p50=res["latency_us"]["p50"], p99=res["latency_us"]["p99"], nlat=res["latency_us"]["count"],
            sat=c["saturated"], ccpu=c["cpu_s"] * 1e6 / max(m["received"], 1), share=c["cpu_s"] / wall / cores,
            bcpu=bp.get("cpu_s", float("nan")) * 1e6 / max(m["received"], 1), ev=c.get("saturation_evidence"),
            wait=c.get("run_delay_s", float("nan")), lag=c["schedule_lag_us"]["p99"],
            steal=100 * k.get("cpu_steal_ticks", 0) / k["cpu_ticks"] if k.get("cpu_ticks") else float("nan")))
    if not rows:
        print(f"| {t} | no result | | | | | | | | | | | |"); continue
    med = lambda k: statistics.median(r[k] for r in rows)
    runs_of = lambda k, f: ", ".join(f.format(r[k]) for r in rows)
    # No latency: no message due inside the window arrived (a broker that reads its
    # publishers slower than they write delivers, during the window, what was due before it).
    lat = f"{med('p50'):.0f} / {med('p99'):.0f}" if all(r["nlat"] > 0 for r in rows) else "none: no message due in the window arrived"
    print(f"| {t} | {med('rx'):,.0f} ({runs_of('rx', '{:,.0f}')}) | {med('low'):,.0f} | {med('lost'):.0f} | {med('ooo'):.0f} | {lat} | "
          f"{sum(r['sat'] for r in rows)} of {len(rows)} | {med('lag'):.0f} | {med('ccpu'):.3f} | {med('share')*100:.0f}% | {med('wait'):.1f} | "
          f"{med('steal'):.1f} | {med('bcpu'):.3f} |")
    for r in rows:
        if r["sat"]:
            print(f"  {t}: client saturated: {r['ev']}")
PY
