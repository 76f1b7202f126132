#!/usr/bin/env bash
# install-brokers: installs the foreign brokers mqblast's tests and studies start
# (internal/brokers), each only when it is missing:
#   rabbitmq  Debian's rabbitmq-server (3.10 on bookworm; its MQTT plugin ships with it)
#   aedes     npm's aedes@1 into $CACHE/aedes (node_modules there; Node.js 20 or later)
#   gmqtt     gmqttd of github.com/DrmagicE/gmqtt v0.5.0, built into $CACHE/gmqtt
# CACHE is $XDG_CACHE_HOME/mqblast, else ~/.cache/mqblast (Go's os.UserCacheDir).
# Usage: scripts/install-brokers.sh [rabbitmq] [aedes] [gmqtt]   (none: all three)
set -euo pipefail
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/mqblast"
GMQTT=github.com/DrmagicE/gmqtt@v0.5.0
kinds=("$@")
[ ${#kinds[@]} -gt 0 ] || kinds=(rabbitmq aedes gmqtt)

for k in "${kinds[@]}"; do
  case "$k" in
  rabbitmq)
    if [ ! -x /usr/lib/rabbitmq/bin/rabbitmq-server ]; then
      apt-get update -qq
      # policy-rc.d or not, the packaged service is not used: the tests start their own nodes.
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq rabbitmq-server >/dev/null
    fi
    echo "rabbitmq: $(ls -d /usr/lib/rabbitmq/lib/rabbitmq_server-* | sed 's/.*-//')"
    ;;
  aedes)
    if [ ! -f "$CACHE/aedes/node_modules/aedes/aedes.js" ]; then
      if ! command -v npm >/dev/null 2>&1; then
        # Not Debian's nodejs: bookworm's is 18, and aedes 1.x wants 20 or later.
        echo "install-brokers: aedes 1.x needs Node.js 20 or later with npm on PATH" >&2
        exit 1
      fi
      mkdir -p "$CACHE/aedes"
      npm install --prefix "$CACHE/aedes" --no-audit --no-fund --loglevel=error aedes@1 >/dev/null
    fi
    echo "aedes: $(sed -n 's/^\t*"version": "\(.*\)",/\1/p' "$CACHE/aedes/node_modules/aedes/package.json" | head -1) in $CACHE/aedes"
    ;;
  gmqtt)
    # go install gmqttd@v0.5.0 needs the proxy's version list of the module (its
    # deprecation check); building it from the downloaded module does not.
    if [ ! -x "$CACHE/gmqtt/gmqttd" ]; then
      src=$(go mod download -json "$GMQTT" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
      [ -n "$src" ] || { echo "go mod download $GMQTT gave no directory" >&2; exit 1; }
      tmp=$(mktemp -d)
      trap 'rm -rf "$tmp"' EXIT
      cp -r "$src/." "$tmp"
      chmod -R u+w "$tmp"
      mkdir -p "$CACHE/gmqtt"
      (cd "$tmp" && go build -o "$CACHE/gmqtt/gmqttd" ./cmd/gmqttd)
      echo "${GMQTT#*@}" >"$CACHE/gmqtt/VERSION"
    fi
    echo "gmqtt: $(cat "$CACHE/gmqtt/VERSION") in $CACHE/gmqtt"
    ;;
  *)
    echo "install-brokers: unknown broker $k (want rabbitmq, aedes or gmqtt)" >&2
    exit 2
    ;;
  esac
done
