#!/usr/bin/env bash
# bench-tls-sink: N mqtts connections held from this host against `mqblast sink --tls-cert
# --tls-key --procs auto` (TLS 1.3, ECDSA P-256, the records opened and sealed by the sink's
# event loop): scripts/bench-1m.sh's run over mqtts, with a CA and a sink certificate made
# here (openssl) that the client trusts (--cacert). Prints bench-1m's table (client and sink
# RSS and CPU per connection, time to all connected) and, per run, the handshakes the sink
# completed and their rate over the connect phase. SCHEME=wss:// runs the same over
# WebSocket and TLS (the sink with --ws; its upgrades beside the handshakes).
#
# Parameters (environment): N=300000 connections, RATE=5000 per second, HOLD=60s, RUNS=1,
# BIND=127.0.0.2-127.0.0.41, ADDRS=40, PORT=18830, SINK_ARGS and EXTRA (more flags for the
# sink and the run), SCHEME=mqtts:// (or wss://), TUNE, OUT=results/tls-sink.
# Small try: N=10000 HOLD=10s make bench-tls-sink
set -euo pipefail
cd "$(dirname "$0")/.."
export N=${N:-300000} RUNS=${RUNS:-1} OUT=${OUT:-results/tls-sink}
SCHEME=${SCHEME:-mqtts://}
case "$SCHEME" in
mqtts://) ws= ;;
wss://) ws=--ws ;;
*) echo "bench-tls-sink: SCHEME $SCHEME: want mqtts:// or wss://" >&2; exit 2 ;;
esac
mkdir -p "$OUT/certs"
command -v openssl >/dev/null || { echo "bench-tls-sink needs openssl (apt-get install -y openssl) to make the certificates" >&2; exit 1; }
c=$OUT/certs
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=bench-tls-sink CA" \
  -keyout "$c/ca-key.pem" -out "$c/ca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=localhost" \
  -keyout "$c/sink-key.pem" -out "$c/sink.csr" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' > "$c/ext.cnf"
openssl x509 -req -in "$c/sink.csr" -CA "$c/ca.pem" -CAkey "$c/ca-key.pem" -CAcreateserial -days 2 \
  -extfile "$c/ext.cnf" -out "$c/sink.pem" 2>/dev/null
chmod 600 "$c"/*-key.pem
SCHEME=$SCHEME SINK_ARGS="$ws --tls-cert $c/sink.pem --tls-key $c/sink-key.pem ${SINK_ARGS:-}" \
  EXTRA="--cacert $c/ca.pem ${EXTRA:-}" scripts/bench-1m.sh
for r in $(seq 1 "$RUNS"); do
  python3 - "$OUT/1m-sink-$r.jsonl" "$OUT/1m-run-$r.json" "$r" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
res = json.load(open(sys.argv[2]))
t = (lines[-1].get("tls") or {}) if lines else {}
w = (lines[-1].get("ws") or {}) if lines else {}
c = res["connections"]
rate = t.get("handshakes", 0) / max(c["connect_phase_s"], 1e-9)
print(f"run {sys.argv[3]}: sink TLS handshakes {t.get('handshakes', 0)}, failed {t.get('handshake_failures', 0)}, "
      f"queued {t.get('queued', 0)}, closed by the record layer {sum((t.get('closed') or {}).values())}; "
      f"{rate:.0f} handshakes/s over the connect phase ({c['connect_phase_s']:.1f} s)"
      + (f"; WebSocket upgrades {w.get('upgrades', 0)}, refused {w.get('refused', 0)}, frame errors {w.get('protocol_errors', 0)}" if w else ""))
PY
done
