#!/usr/bin/env bash
# fleet-1m: a million MQTT clients of a mixed workload on one host, split over two servers as
# a broker cluster would hold them. One `mqblast run scripts/fleet-1m.json --procs auto` over
# 40 source addresses: the idle fleet (N - TALKERS clients held with a 60 s keepalive, 10 % of
# them reconnecting at once at STORM_AT) on `mqblast sink --procs auto` through the group's own
# server; the talkers (TALKERS devices publishing 1 msg/s QoS 1 and subscribed to their
# command topics), the backend (10 shared-subscription consumers) and the commands (10 clients,
# 1 command/s each) on Mosquitto, the run's server. Beside it, scripts/bench-1m.sh's
# Connections-only run of N clients against the sink (same rate, same keepalive): the cost
# per idle client of groups. `mqblast check` first (`tune apply` when TUNE=1 and it fails).
# ROUNDS times, the two runs alternating in order; prints a table of both (medians) and their
# ratio, with the verdict on "within 10 %" (time to all connected, client RSS and CPU per
# connection).
#
# Parameters (environment): N=1000000 clients in all (the fleet is N - TALKERS), TALKERS=10000,
# RATE=5000 connections per second, DURATION=150s of publishing, STORM_AT=60s, HOLD=60s (the
# Connections-only run's), KEEPALIVE=60 (the Connections-only run's, as the fleet's),
# ROUNDS=1, FROM=1 (the first round to run: FROM=2 ROUNDS=2 adds a round beside the first in
# OUT, and the table is of both), RUNS="fleet conn" (the runs, in odd rounds' order; even
# rounds reverse it), BIND=127.0.0.2-127.0.0.41, ADDRS=40, PORT=18830 (the sink's),
# MQTT_PORT=18831 (Mosquitto's), EXTRA (more flags for the fleet's mqblast run), TUNE=1 as
# root, else 0, OUT=results/fleet-1m.
# Small try: N=20000 DURATION=30s STORM_AT=10s HOLD=10s make fleet-1m
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-1000000}
TALKERS=${TALKERS:-10000}
RATE=${RATE:-5000}
DURATION=${DURATION:-150s}
STORM_AT=${STORM_AT:-60s}
HOLD=${HOLD:-60s}
KEEPALIVE=${KEEPALIVE:-60}
ROUNDS=${ROUNDS:-1}
FROM=${FROM:-1}
RUNS=${RUNS:-fleet conn}
BIND=${BIND:-127.0.0.2-127.0.0.41}
ADDRS=${ADDRS:-40}
PORT=${PORT:-18830}
MQTT_PORT=${MQTT_PORT:-18831}
TUNE=${TUNE:-$([ "$(id -u)" = 0 ] && echo 1 || echo 0)}
OUT=${OUT:-results/fleet-1m}
BIN=${BIN:-./bin/mqblast}
SCENARIO=scripts/fleet-1m.json
command -v mosquitto >/dev/null || { echo "fleet-1m needs mosquitto (apt-get install -y mosquitto)" >&2; exit 1; }
FLEET=$(( N - TALKERS ))
[ "$FLEET" -ge 1 ] || { echo "fleet-1m: N=$N leaves no fleet beside TALKERS=$TALKERS; raise N" >&2; exit 2; }
mkdir -p "$OUT"
# shellcheck source=scripts/lib-1m.sh
. scripts/lib-1m.sh
sinkpid=
sampler=
mpid=
cleanup() {
  sampler_stop
  sink_stop
  [ -n "$mpid" ] && kill "$mpid" 2>/dev/null || true
  wait 2>/dev/null || true
}
trap cleanup EXIT
steal() { awk '/^cpu /{print $9}' /proc/stat; }
hostnote() { echo "steal_ticks $(( $(steal) - $1 )) wall_s $(( $(date +%s) - $2 )) loadavg $(cut -d' ' -f1-3 /proc/loadavg) ticks_per_s $(getconf CLK_TCK) cores $(nproc)"; }

# The run: N clients plus the backend and the commands.
host_check fleet "$(( N + 20 ))"

fleet_run() {
  local r=$1 code=0 s0 t0
  echo "== fleet run $r: $FLEET held on mqblast sink --procs auto (127.0.0.1:$PORT, storm at $STORM_AT), $TALKERS talkers + backend + commands on Mosquitto (127.0.0.1:$MQTT_PORT), $RATE/s over $BIND, $DURATION of publishing" >&2
  printf 'listener %d 127.0.0.1\nallow_anonymous true\nmax_connections -1\nmax_queued_messages 0\npersistence false\nlog_dest none\n' \
    "$MQTT_PORT" > "$OUT/fleet-mosquitto.conf"
  mosquitto -c "$OUT/fleet-mosquitto.conf" & mpid=$!
  sleep 1
  kill -0 "$mpid" 2>/dev/null || { echo "fleet-1m: Mosquitto exited at start (is port $MQTT_PORT taken?)" >&2; exit 1; }
  sink_start "$OUT/fleet-sink-$r" "$FLEET"
  sampler_start "$OUT/fleet-kmem-$r.txt"
  s0=$(steal); t0=$(date +%s)
  # shellcheck disable=SC2086 # EXTRA is a list of flags
  $BIN run "$SCENARIO" --set groups.fleet.client_count="$FLEET" --set groups.talkers.client_count="$TALKERS" \
    --set groups.fleet.server.port="$PORT" --set groups.fleet.churn.at_sec="$STORM_AT" \
    --set parameters.connection_rate="$RATE" --broker "127.0.0.1:$MQTT_PORT" --broker-pid "$mpid" \
    --bind "$BIND" --procs auto --duration "$DURATION" --no-check \
    --out "$OUT/fleet-run-$r.json" ${EXTRA:-} > "$OUT/fleet-run-$r.txt" 2> "$OUT/fleet-run-$r.err" || code=$?
  hostnote "$s0" "$t0" > "$OUT/fleet-host-$r.txt"
  sampler_stop
  sink_stop
  kill "$mpid" 2>/dev/null || true; wait "$mpid" 2>/dev/null || true; mpid=
  tail -n 12 "$OUT/fleet-run-$r.txt" >&2 || true
  [ "$code" = 0 ] || echo "fleet run $r exited $code (see $OUT/fleet-run-$r.err)" >&2
}

conn_run() {
  local r=$1 s0 t0
  echo "== Connections-only run $r: scripts/bench-1m.sh, $N held $HOLD, keepalive ${KEEPALIVE}s" >&2
  mkdir -p "$OUT/conn-$r"
  s0=$(steal); t0=$(date +%s)
  N=$N RUNS=1 HOLD=$HOLD RATE=$RATE BIND=$BIND ADDRS=$ADDRS PORT=$PORT TUNE=$TUNE BIN=$BIN OUT=$OUT/conn-$r \
    EXTRA="--set parameters.keep_alive_sec=$KEEPALIVE" scripts/bench-1m.sh > "$OUT/conn-$r/table.md" \
    || echo "fleet-1m: the Connections-only run $r exited $? (see $OUT/conn-$r)" >&2
  hostnote "$s0" "$t0" > "$OUT/conn-host-$r.txt"
}

reversed=$(echo "$RUNS" | awk '{for(i=NF;i>0;i--) printf "%s%s", $i, (i>1?" ":"")}')
for r in $(seq "$FROM" "$ROUNDS"); do
  # every other round the other way round, so that neither run always comes first
  order=$RUNS
  [ $(( r % 2 )) = 1 ] || order=$reversed
  for kind in $order; do
    case $kind in
      fleet) fleet_run "$r" ;;
      conn) conn_run "$r" ;;
      *) echo "fleet-1m: unknown run $kind in RUNS (fleet, conn)" >&2; exit 2 ;;
    esac
  done
done

PYTHONPATH=scripts python3 - "$OUT" "$N" "$ROUNDS" "$(nproc)" <<'PY'
import json, math, statistics, sys
from lib_1m import figures
out, n, rounds, cores = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])

def load(path):
    try:
        return json.load(open(path))
    except Exception:
        return None

def host(path):
    try:
        w = open(path).read().split()
        d = dict(zip(w[0::2], w[1::2]))
        st = int(d["steal_ticks"]) / int(d["ticks_per_s"]) / max(int(d["wall_s"]), 1) / int(d["cores"]) * 100
        return f"steal {st:.1f} %, load {d['loadavg']}"
    except Exception:
        return "?"

nan = float("nan")
def lat(group, q):
    l = group.get("latency_us") or {}
    return l.get(q, nan) if l.get("count") else nan  # none measured: no figure, not 0
fleet, conn = [], []
for r in range(1, rounds + 1):
    res = load(f"{out}/fleet-run-{r}.json")
    if res:
        g = {x["name"]: x for x in res.get("groups", [])}
        fl = g.get("fleet", {})
        f = figures(res, f"{out}/fleet-sink-{r}.jsonl", f"{out}/fleet-kmem-{r}.txt")
        fc = fl.get("connections", {})
        rl = fc.get("reconnect_latency_us") or {}
        talk = g.get("talkers", {})
        f.update(run=r, res=res, groups=g, host=host(f"{out}/fleet-host-{r}.txt"),
                 fleet_p50=fc.get("connect_latency_us", {}).get("p50", nan),
                 fleet_p99=fc.get("connect_latency_us", {}).get("p99", nan),
                 talk_p50=lat(talk, "p50"), talk_p99=lat(talk, "p99"), talk_n=talk.get("latency_us", {}).get("count", 0),
                 cmd_p50=lat(g.get("commands", {}), "p50"), cmd_p99=lat(g.get("commands", {}), "p99"),
                 received=res["messages"].get("received"), published=res["messages"].get("published"),
                 lost=res["messages"].get("lost"), storm_ended=(fl.get("churn") or {}).get("ended", 0),
                 reconnected=fc.get("reconnected", 0), rec_p50=rl.get("p50", nan), rec_p99=rl.get("p99", nan),
                 per_conn_us=f["connect_s"] * 1e6 / max(f["established"], 1))
        fleet.append(f)
    res = load(f"{out}/conn-{r}/1m-run-1.json")
    if res:
        f = figures(res, f"{out}/conn-{r}/1m-sink-1.jsonl", f"{out}/conn-{r}/1m-kmem-1.txt")
        f.update(run=r, res=res, host=host(f"{out}/conn-host-{r}.txt"),
                 per_conn_us=f["connect_s"] * 1e6 / max(f["established"], 1))
        conn.append(f)
for f in fleet + conn:
    f.update(dropped=f["res"]["connections"]["dropped"], procs=f["res"]["host"]["procs"],
             client_rss_mib=f["client_rss"] * f["established"] / 2**20)
if not fleet and not conn:
    sys.exit("fleet-1m: no run produced a result")

def med(rows, k):
    v = [r[k] for r in rows if r.get(k) is not None and not (isinstance(r[k], float) and math.isnan(r[k]))]
    return statistics.median(v) if v else nan
def fmt(v, f):
    return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else f.format(v)
def runs(rows, k, f):
    return ", ".join(fmt(r.get(k), f) for r in rows)

print(f"\nfleet-1m: {n} clients, {len(fleet)} fleet run(s), {len(conn)} Connections-only run(s), {cores} cores; medians (runs)")
print("| figure | fleet (groups) | Connections-only | fleet / Connections-only |")
print("|---|---|---|---|")
def row(name, k, f, ratio=False, conn_k=None):
    a, b = med(fleet, k), med(conn, conn_k or k)
    cruns = f" ({runs(conn, conn_k or k, f)})" if not math.isnan(b) else ""
    rat = fmt(a / b if ratio and b and not math.isnan(a) and not math.isnan(b) else nan, "{:.2f}")
    print(f"| {name} | {fmt(a, f)} ({runs(fleet, k, f)}) | {fmt(b, f)}{cruns} | {rat if ratio else ''} |")
for gname in ("fleet", "talkers", "backend", "commands"):
    for f in fleet:
        f[f"est_{gname}"] = f["groups"].get(gname, {}).get("connections", {}).get("established", nan)
    row(f"established: {gname}", f"est_{gname}", "{:.0f}")
row("established, all", "established", "{:.0f}")
row("failed", "failed", "{:.0f}")
row("dropped while held", "dropped", "{:.0f}")
row("client processes (--procs auto)", "procs", "{:.0f}")
row("time to all connected (s)", "connect_s", "{:.1f}", True)
row("time per connection (µs wall)", "per_conn_us", "{:.0f}", True)
row("connect latency p50, all (µs)", "p50", "{:.0f}", True)
row("connect latency p99, all (µs)", "p99", "{:.0f}", True)
row("connect latency p50, fleet (µs)", "fleet_p50", "{:.0f}", True, "p50")
row("connect latency p99, fleet (µs)", "fleet_p99", "{:.0f}", True, "p99")
row("talkers' latency p50 (µs)", "talk_p50", "{:.0f}")
row("talkers' latency p99 (µs)", "talk_p99", "{:.0f}")
row("talkers' messages measured (latency)", "talk_n", "{:.0f}")
row("commands' latency p50 (µs)", "cmd_p50", "{:.0f}")
row("commands' latency p99 (µs)", "cmd_p99", "{:.0f}")
row("messages published", "published", "{:.0f}")
row("messages received", "received", "{:.0f}")
row("lost", "lost", "{:.0f}")
row("storm: connections ended", "storm_ended", "{:.0f}")
row("storm: reconnected", "reconnected", "{:.0f}")
row("reconnect latency p50 (µs)", "rec_p50", "{:.0f}")
row("reconnect latency p99 (µs)", "rec_p99", "{:.0f}")
row("client RSS per connection (B)", "client_rss", "{:.0f}", True)
row("client RSS held after the connect phase (MiB)", "client_rss_mib", "{:.0f}", True)
row("client CPU per connection set-up (µs)", "client_cpu", "{:.1f}", True)
row("sink RSS per connection (B)", "sink_rss", "{:.0f}", True)
row("sink CPU per connection set-up (µs)", "sink_cpu", "{:.1f}", True)
row("kernel memory per connection (B)", "kernel", "{:.0f}", True)
for f in fleet: print(f"fleet run {f['run']}: {f['host']}")
for f in conn: print(f"Connections-only run {f['run']}: {f['host']}")
if fleet and conn:
    bad = []
    for name, k in (("time per connection", "per_conn_us"), ("client RSS per connection", "client_rss"),
                    ("client CPU per connection set-up", "client_cpu")):
        a, b = med(fleet, k), med(conn, k)
        if not (b and a / b <= 1.10):
            bad.append(f"{name} {a / b:.2f}x" if b else f"{name} (no figure)")
    extra = med(fleet, "client_rss_mib") - med(conn, "client_rss_mib")
    print(f"\nclient RSS beyond the Connections-only run's: {extra:.0f} MiB, {extra / max(med(fleet, 'procs'), 1):.2f} MiB per client process")
    print("within 10 %: " + ("yes (time, client RSS and CPU per connection)" if not bad else "no: " + "; ".join(bad)))
PY
