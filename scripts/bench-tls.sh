#!/usr/bin/env bash
# bench-tls: CONNS MQTT connections from one `mqblast run` to one local Mosquitto over each
# transport (tcp, mqtts, ws, wss; certificates made here with openssl), RUNS times each,
# interleaved; mqtts and wss on the loop's TLS record layer (the default), and again as
# mqtts-tls.Conn and wss-tls.Conn with --tls-record-layer tls.Conn, the old path, in the
# same run. Prints the medians of the client's RSS per idle connection, CPU per
# connection set-up (TCP + TLS handshake + WebSocket upgrade + CONNECT), the TLS
# handshake's CPU and time, and connect latency; beside them the TLS floor (bin/floor tls:
# bare crypto/tls handshakes against the same mqtts listener with the tls.Config mqblast
# builds from the same --cacert, FLOOR_CONNS of them after each round of runs) and
# mqblast's handshake CPU over the floor's. Usage: scripts/bench-tls.sh [CONNS] [RUNS]
# (env: RATE HOLD TRANSPORTS BASE (ports BASE+1 to BASE+4) FLOOR_CONNS OUT BIN GO)
set -euo pipefail
cd "$(dirname "$0")/.."
CONNS=${1:-10000}
RUNS=${2:-3}
RATE=${RATE:-2000}
HOLD=${HOLD:-15s}
TRANSPORTS=${TRANSPORTS:-tcp mqtts mqtts-tls.Conn ws wss wss-tls.Conn}
BIN=${BIN:-./bin/mqblast}
BASE=${BASE:-28910}
FLOOR=${FLOOR:-./bin/floor}
FLOOR_CONNS=${FLOOR_CONNS:-2000}
CGO_ENABLED=0 ${GO:-go} build -trimpath -o "$FLOOR" ./internal/cmd/floor
OUT=${OUT:-results}
command -v mosquitto >/dev/null || { echo "bench-tls needs mosquitto (apt-get install -y mosquitto)" >&2; exit 1; }
command -v openssl >/dev/null || { echo "bench-tls needs openssl (apt-get install -y openssl)" >&2; exit 1; }
mkdir -p "$OUT"
tmp=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
(
  cd "$tmp"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=bench-ca \
    -keyout ca.key -out ca.pem 2>/dev/null
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=localhost \
    -keyout server.key -out server.csr 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' > ext.cnf
  openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
    -extfile ext.cnf -out server.pem 2>/dev/null
)
tls="cafile $tmp/ca.pem
certfile $tmp/server.pem
keyfile $tmp/server.key"
cat > "$tmp/m.conf" <<CONF
user root
allow_anonymous true
max_connections -1
persistence false
log_dest none
listener $((BASE + 1)) 127.0.0.1
listener $((BASE + 2)) 127.0.0.1
$tls
listener $((BASE + 3)) 127.0.0.1
protocol websockets
socket_domain ipv4
listener $((BASE + 4)) 127.0.0.1
protocol websockets
socket_domain ipv4
$tls
CONF
mosquitto -c "$tmp/m.conf" & pid=$!
sleep 1
declare -A url=([tcp]=127.0.0.1:$((BASE + 1)) [mqtts]=mqtts://127.0.0.1:$((BASE + 2)) [ws]=ws://127.0.0.1:$((BASE + 3))/mqtt [wss]=wss://127.0.0.1:$((BASE + 4))/mqtt)
url[mqtts-tls.Conn]=${url[mqtts]}
url[wss-tls.Conn]=${url[wss]}
for r in $(seq 1 "$RUNS"); do
  for tr in $TRANSPORTS; do
    echo "run $r/$RUNS $tr: $CONNS connections at $RATE/s, hold $HOLD" >&2
    extra=()
    case "$tr" in
      mqtts | wss) extra=(--cacert "$tmp/ca.pem") ;;
      *-tls.Conn) extra=(--cacert "$tmp/ca.pem" --tls-record-layer tls.Conn) ;;
    esac
    $BIN run singlenode-conn-tcp-10K-100 --set publishers.client_count="$CONNS" \
      --set parameters.connection_rate="$RATE" --duration "$HOLD" --broker "${url[$tr]}" "${extra[@]}" \
      --out "$OUT/tls-$tr-$CONNS-$r.json" > "$OUT/tls-$tr-$CONNS-$r.txt"
  done
  echo "run $r/$RUNS floor: $FLOOR_CONNS bare crypto/tls handshakes" >&2
  $FLOOR tls --broker "127.0.0.1:$((BASE + 2))" --cacert "$tmp/ca.pem" --connections "$FLOOR_CONNS" > "$OUT/tls-floor-$r.json"
done
python3 - "$OUT" "$CONNS" "$RUNS" $TRANSPORTS <<'PY'
import json, statistics, sys
out, conns, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
print(f"{'transport':14s} {'established':>11s} {'rss B/conn':>10s} {'cpu µs/connect':>14s} {'tls cpu µs':>10s} {'tls p50 µs':>10s} {'connect p50 µs':>14s}  record layer")
for tr in sys.argv[4:]:
    rs = [json.load(open(f"{out}/tls-{tr}-{conns}-{r}.json")) for r in range(1, runs + 1)]
    def med(f): return statistics.median(f(r) for r in rs)
    c = lambda r: r["connections"]
    layers = (rs[0].get("transport") or {}).get("record_layer") or {}
    print(f"{tr:14s} {med(lambda r: c(r)['established']):11.0f} {med(lambda r: r['client']['rss_per_connection_bytes']):10.0f}"
          f" {med(lambda r: r['client']['cpu_per_connect_us']):14.1f} {med(lambda r: c(r).get('tls_handshake_cpu_us', 0)):10.0f}"
          f" {med(lambda r: (c(r).get('tls_handshake_us') or {}).get('p50', 0)):10.0f} {med(lambda r: c(r)['connect_latency_us']['p50']):14.0f}"
          f"  {' '.join(f'{k} {v}' for k, v in sorted(layers.items())) or '-'}")
PY
python3 - "$OUT" "$CONNS" "$RUNS" <<'PY'
import json, statistics, sys
out, conns, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
fl = [json.load(open(f"{out}/tls-floor-{r}.json")) for r in range(1, runs + 1)]
med = lambda xs: statistics.median(xs)
fhs, fconn = med(f["handshake_cpu_us"] for f in fl), med(f["cpu_per_connection_us"] for f in fl)
print(f"floor      {fl[0]['version']}, handshake cpu {fhs:.0f} µs (runs {[round(f['handshake_cpu_us']) for f in fl]}), "
      f"cpu per connection {fconn:.0f} µs (socket, connect, handshake, close, GC; runs {[round(f['cpu_per_connection_us']) for f in fl]})")
try:
    rs = [json.load(open(f"{out}/tls-mqtts-{conns}-{r}.json")) for r in range(1, runs + 1)]
    tcp = [json.load(open(f"{out}/tls-tcp-{conns}-{r}.json")) for r in range(1, runs + 1)]
except FileNotFoundError:
    sys.exit(0)
hs = med(r["connections"]["tls_handshake_cpu_us"] for r in rs)
extra = med(r["client"]["cpu_per_connect_us"] for r in rs) - med(r["client"]["cpu_per_connect_us"] for r in tcp)
print(f"mqtts      handshake cpu {hs:.0f} µs = {hs / fhs:.2f} x the floor's; set-up cpu over tcp's {extra:.0f} µs = {extra / fconn:.2f} x the floor's per connection (goal <= 1.3)")
PY
