#!/usr/bin/env bash
# bench-conn: 100,000 MQTT connections from one `mqblast run` against several Mosquitto
# processes on loopback (each holds fewer than 20,000 here: RLIMIT_NOFILE is per process),
# with --procs auto. Repeats RUNS times and prints the medians of the client's RSS per idle
# connection and CPU per connection set-up. Usage: scripts/bench-conn.sh [CONNS] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
CONNS=${1:-100000}
RUNS=${2:-3}
BROKERS=${BROKERS:-6}
RATE=${RATE:-5000}
HOLD=${HOLD:-20s}
BIN=${BIN:-./bin/mqblast}
OUT=${OUT:-results}
command -v mosquitto >/dev/null || { echo "bench-conn needs mosquitto (apt-get install -y mosquitto)" >&2; exit 1; }
mkdir -p "$OUT"
tmp=$(mktemp -d)
pids=()
# The brokers are waited for, so that a run that follows at once finds their ports free
# (a Mosquitto that cannot bind exits, and its share of the clients is refused).
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
addrs=()
for i in $(seq 1 "$BROKERS"); do
  port=$((28830 + i))
  printf 'listener %d 127.0.0.1\nallow_anonymous true\nmax_connections -1\nuser root\npersistence false\nlog_dest none\n' \
    "$port" > "$tmp/m$i.conf"
  mosquitto -c "$tmp/m$i.conf" & pids+=($!)
  addrs+=("127.0.0.1:$port")
done
sleep 1
for p in "${pids[@]}"; do
  kill -0 "$p" 2>/dev/null || { echo "bench-conn: a Mosquitto exited at start (is its port 2883x taken?)" >&2; exit 1; }
done
brokers=$(IFS=,; echo "${addrs[*]}")
for r in $(seq 1 "$RUNS"); do
  echo "run $r/$RUNS: $CONNS connections at $RATE/s to $BROKERS brokers, hold $HOLD" >&2
  $BIN run singlenode-conn-tcp-10K-100 --set publishers.client_count="$CONNS" \
    --set parameters.connection_rate="$RATE" --duration "$HOLD" --broker "$brokers" \
    --procs auto --out "$OUT/conn-$CONNS-$r.json" > "$OUT/conn-$CONNS-$r.txt"
  tail -n 4 "$OUT/conn-$CONNS-$r.txt" >&2
done
python3 - "$OUT" "$CONNS" "$RUNS" <<'PY'
import json, statistics, sys
out, conns, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
rs = [json.load(open(f"{out}/conn-{conns}-{r}.json")) for r in range(1, runs + 1)]
def med(f): return statistics.median(f(r) for r in rs)
print(f"established       median {med(lambda r: r['connections']['established']):.0f} of {conns}")
print(f"procs             {rs[0]['host']['procs']}")
print(f"rss per conn      median {med(lambda r: r['client']['rss_per_connection_bytes']):.0f} B  runs {[round(r['client']['rss_per_connection_bytes']) for r in rs]}")
print(f"cpu per connect   median {med(lambda r: r['client']['cpu_per_connect_us']):.1f} us runs {[round(r['client']['cpu_per_connect_us'],1) for r in rs]}")
print(f"connect p99       median {med(lambda r: r['connections']['connect_latency_us']['p99'])} us")
print(f"connect rate      median {med(lambda r: r['connections']['connect_rate_per_s']):.0f}/s")
PY
