#!/usr/bin/env bash
# bench-floor: the client's per-message floor. Against one Mosquitto on loopback
# (its own address and a free port), PAIRS publisher/subscriber pairs, PAYLOAD-byte
# messages paced at RATE msg/s per publisher, QoS 0 then QoS 1: `mqblast run` and
# bin/floor (internal/cmd/floor, built here: the same loops, wakes and system calls with no
# MQTT state and no measurement; not part of the mqblast binary) alternate, RUNS times each. Both report the process's CPU time
# (rusage, user+sys) over the measure window (from warm-up to the end of the duration) and
# the PUBLISH packets received in it; the script prints the medians of CPU per received
# message, their ratio (goal: mqblast <= 1.2 x floor) and, from one more run of each under
# `perf stat` (kernel tracepoints, counted in the kernel: no ptrace), the system calls and
# context switches per received message over the whole run.
# Usage: scripts/bench-floor.sh [RUNS]   (env: PAIRS RATE PAYLOAD DURATION QOS ADDR OUT BIN FLOOR GO)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-3}
PAIRS=${PAIRS:-10}
RATE=${RATE:-2000}
PAYLOAD=${PAYLOAD:-64}
DURATION=${DURATION:-10s}
QOS=${QOS:-"0 1"}
ADDR=${ADDR:-127.0.0.62}
BIN=${BIN:-./bin/mqblast}
FLOOR=${FLOOR:-./bin/floor}
[ -x "$BIN" ] || { echo "bench-floor needs $BIN (make build)" >&2; exit 1; }
CGO_ENABLED=0 ${GO:-go} build -trimpath -o "$FLOOR" ./internal/cmd/floor
OUT=${OUT:-results}
command -v mosquitto >/dev/null || { echo "bench-floor needs mosquitto (apt-get install -y mosquitto)" >&2; exit 1; }
mkdir -p "$OUT"
tmp=$(mktemp -d)
mpid=""
cleanup() { [ -n "$mpid" ] && kill "$mpid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
port=$(python3 -c "import socket; s=socket.socket(); s.bind(('$ADDR', 0)); print(s.getsockname()[1])")
printf 'listener %d %s\nallow_anonymous true\nmax_connections -1\nuser root\npersistence false\nlog_dest none\n' \
  "$port" "$ADDR" > "$tmp/m.conf"
mosquitto -c "$tmp/m.conf" & mpid=$!
for _ in $(seq 50); do (echo > "/dev/tcp/$ADDR/$port") 2>/dev/null && break; sleep 0.1; done
broker="$ADDR:$port"
perfok=0
perf stat -e raw_syscalls:sys_enter true >/dev/null 2>&1 && perfok=1
EVENTS=task-clock,context-switches,raw_syscalls:sys_enter,syscalls:sys_enter_write,syscalls:sys_enter_recvmsg,syscalls:sys_enter_epoll_pwait2,syscalls:sys_enter_epoll_ctl,syscalls:sys_enter_futex,syscalls:sys_enter_nanosleep
for q in $QOS; do
  args=(quick-p2p-100 --broker "$broker" --set publishers.client_count="$PAIRS" --set subscribers.client_count="$PAIRS"
    --set parameters.payload_size="$PAYLOAD" --set parameters.publish_rate="$RATE"
    --set publishers.qos="$q" --set subscribers.qos="$q" --duration "$DURATION")
  for r in $(seq 1 "$RUNS"); do
    echo "qos $q run $r/$RUNS: $PAIRS pairs x $RATE msg/s, $PAYLOAD B, $DURATION, against Mosquitto $broker" >&2
    $BIN run "${args[@]}" --no-check --format json > "$OUT/floor-q$q-run-$r.json" 2>/dev/null
    $FLOOR "${args[@]}" > "$OUT/floor-q$q-floor-$r.json"
  done
  if [ "$perfok" = 1 ]; then
    echo "qos $q: system calls (perf stat)" >&2
    perf stat -x, -e "$EVENTS" -o "$OUT/floor-q$q-run-perf.txt" $BIN run "${args[@]}" --no-check --format json > "$OUT/floor-q$q-run-perf.json" 2>/dev/null
    perf stat -x, -e "$EVENTS" -o "$OUT/floor-q$q-floor-perf.txt" $FLOOR "${args[@]}" > "$OUT/floor-q$q-floor-perf.json"
  fi
done
python3 - "$OUT" "$RUNS" "$QOS" "$perfok" "$PAIRS" "$RATE" "$PAYLOAD" <<'PY'
import json, os, statistics, sys
out, runs, qos, perfok = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4] == "1"
pairs, rate, payload = sys.argv[5:8]
med = statistics.median
print(f"per-message floor: {pairs} pairs x {rate} msg/s, {payload} B, Mosquitto on loopback; "
      f"CPU = rusage user+sys over the measure window / PUBLISH received in it; medians of {runs}")
def perf(fn, n):
    if not os.path.exists(fn):
        return {}
    d = {}
    for line in open(fn):
        p = line.strip().split(",")
        if len(p) > 3 and p[0].replace(".", "").isdigit():
            d[p[2].split(":")[-1].replace("sys_enter_", "")] = float(p[0]) / n
    return d
for q in qos:
    rs = [json.load(open(f"{out}/floor-q{q}-run-{r}.json")) for r in range(1, runs + 1)]
    fs = [json.load(open(f"{out}/floor-q{q}-floor-{r}.json")) for r in range(1, runs + 1)]
    def run_us(r):
        t = r["throughput"]
        return r["client"]["cpu_measure_s"] * 1e6 / (t["receive_per_s"] * t["window_s"])
    ru = [run_us(r) for r in rs]
    fu = [f["cpu_per_received_us"] for f in fs]
    print(f"QoS {q}")
    print(f"  mqblast run   {med(ru):6.2f} us/msg  runs {[round(x, 2) for x in ru]}  "
          f"recv/s {[round(r['throughput']['receive_per_s']) for r in rs]}  lost {[r['messages']['lost'] for r in rs]}  "
          f"latency p50/p99 us {[(r['latency_us']['p50'], r['latency_us']['p99']) for r in rs]}")
    print(f"  floor         {med(fu):6.2f} us/msg  runs {[round(x, 2) for x in fu]}  "
          f"recv/s {[round(f['received_window'] / f['window_s']) for f in fs]}  lost conns {[f['lost_conns'] for f in fs]}")
    print(f"  ratio         {med(ru) / med(fu):6.2f} (goal <= 1.20)")
    if perfok:
        rp = json.load(open(f"{out}/floor-q{q}-run-perf.json"))
        fp = json.load(open(f"{out}/floor-q{q}-floor-perf.json"))
        a = perf(f"{out}/floor-q{q}-run-perf.txt", rp["messages"]["received"])
        b = perf(f"{out}/floor-q{q}-floor-perf.txt", fp["received"])
        print("  per received message, whole run (perf stat):   mqblast   floor")
        for k in a:
            if k == "task-clock":
                print(f"    {'cpu (task-clock) us':28s} {a[k] * 1e3:8.2f} {b.get(k, 0) * 1e3:8.2f}")
            else:
                print(f"    {k:28s} {a[k]:8.3f} {b.get(k, 0):8.3f}")
PY
