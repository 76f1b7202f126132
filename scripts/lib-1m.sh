# lib-1m.sh: the pieces that scripts/bench-1m.sh and scripts/fleet-1m.sh share, sourced
# (not run): the host check before a million connections, the kernel memory samplers and
# `mqblast sink --procs auto` started and waited for. They use BIN, OUT, TUNE, N, ADDRS,
# RATE and PORT of the sourcing script.

# procs_for CONNS: the worker processes CONNS connections need under the descriptor limit.
procs_for() {
  local hard p
  hard=$(ulimit -Hn)
  p=$(( ($1 + hard - 200) / (hard - 100) ))
  [ "$p" -ge 1 ] || p=1
  echo "$p"
}

# host_check NAME CONNS: `mqblast check` for CONNS connections over ADDRS source addresses
# against a local broker on PORT, into $OUT/NAME-check.txt; when it fails and TUNE=1, `mqblast
# tune apply` and check again. The run goes on either way (--no-check), to find the limit.
host_check() {
  local name=$1 conns=$2 procs
  procs=$(procs_for "$conns")
  local args=(-c "$conns" --addrs "$ADDRS" --procs "$procs" --local-broker --connect-rate "$RATE" --broker-port "$PORT")
  echo "== mqblast check ${args[*]}" >&2
  if ! $BIN check "${args[@]}" > "$OUT/$name-check.txt"; then
    cat "$OUT/$name-check.txt" >&2
    if [ "$TUNE" = 1 ]; then
      echo "== check failed: applying its fixes (mqblast tune apply), then checking again" >&2
      $BIN tune apply "${args[@]}" >&2 || true
      $BIN check "${args[@]}" > "$OUT/$name-check.txt" \
        || { cat "$OUT/$name-check.txt" >&2; echo "$name: the host is still not ready (above); the run goes on with --no-check to find the limit" >&2; }
    else
      echo "$name: the host is not ready (above); TUNE=1 applies the fixes (as root). The run goes on with --no-check to find the limit" >&2
    fi
  fi
}

# kernel memory in bytes: slab and TCP socket pages (sockstat "mem" is in pages)
kmem() { awk '/^Slab:/{printf "%.0f\n", $2*1024}' /proc/meminfo; }
tcpmem() { awk '/^TCP:/{for(i=1;i<=NF;i++) if($i=="mem") print $(i+1)*4096}' /proc/net/sockstat; }
memavail() { awk '/^MemAvailable:/{printf "%.0f\n", $2*1024}' /proc/meminfo; }

# sampler_start FILE: the kernel memory before, then a sample a second into FILE in the
# background (its pid in $sampler); sampler_stop ends it.
sampler_start() {
  echo "slab_before $(kmem) tcpmem_before $(tcpmem) memavail_before $(memavail)" > "$1"
  ( while sleep 1; do echo "sample $(date +%s) $(kmem) $(tcpmem) $(memavail)"; done ) >> "$1" &
  sampler=$!
}
sampler_stop() {
  [ -n "${sampler:-}" ] || return 0
  kill "$sampler" 2>/dev/null || true; wait "$sampler" 2>/dev/null || true; sampler=
}

# sink_start PREFIX CONNS [FLAGS...]: `mqblast sink --procs auto` for CONNS connections on
# 127.0.0.1:PORT, its stats lines in PREFIX.jsonl and stderr in PREFIX.err, its pid in
# $sinkpid; returns once it says ready (exits 1 with its stderr if it does not in 30 s).
# sink_stop ends it (SIGINT: its last stats line).
sink_start() {
  local prefix=$1 conns=$2
  shift 2
  $BIN sink --listen "127.0.0.1:$PORT" --procs auto --connections "$conns" --stats-json --interval 1s "$@" \
    > "$prefix.jsonl" 2> "$prefix.err" &
  sinkpid=$!
  for _ in $(seq 1 300); do grep -q '^ready ' "$prefix.err" 2>/dev/null && break; sleep 0.1; done
  grep -q '^ready ' "$prefix.err" || { cat "$prefix.err" >&2; exit 1; }
}
sink_stop() {
  [ -n "${sinkpid:-}" ] || return 0
  kill -INT "$sinkpid" 2>/dev/null || true; wait "$sinkpid" 2>/dev/null || true; sinkpid=
}
