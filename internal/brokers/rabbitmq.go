package brokers

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// rabbitmqServer is the Debian package's start script (/usr/sbin/rabbitmq-server is a
// wrapper that runs it as the rabbitmq user, with the system's directories).
const rabbitmqServer = "/usr/lib/rabbitmq/bin/rabbitmq-server"

func findRabbitMQ() (*Installation, error) {
	bin := rabbitmqServer
	if _, err := os.Stat(bin); err != nil {
		p, err := exec.LookPath("rabbitmq-server")
		if err != nil || p == "/usr/sbin/rabbitmq-server" {
			return nil, &notInstalled{RabbitMQ, "no " + rabbitmqServer, Install(RabbitMQ)}
		}
		bin = p
	}
	epmd, err := exec.LookPath("epmd")
	if err != nil {
		m, _ := filepath.Glob("/usr/lib/erlang/erts-*/bin/epmd")
		if len(m) == 0 {
			return nil, &notInstalled{RabbitMQ, "no epmd (Erlang's port mapper)", Install(RabbitMQ)}
		}
		epmd = m[len(m)-1]
	}
	in := &Installation{Kind: RabbitMQ, StartTimeout: StartTimeout(RabbitMQ), bin: bin, epmd: epmd}
	// The Debian layout: /usr/lib/rabbitmq/lib/rabbitmq_server-3.10.8/plugins/rabbitmq_mqtt-3.10.8.
	libs, _ := filepath.Glob(filepath.Join(filepath.Dir(filepath.Dir(bin)), "lib", "rabbitmq_server-*"))
	if len(libs) > 0 {
		in.Version = strings.TrimPrefix(filepath.Base(libs[len(libs)-1]), "rabbitmq_server-")
		if m, _ := filepath.Glob(filepath.Join(libs[len(libs)-1], "plugins", "rabbitmq_mqtt-*")); len(m) == 0 {
			return nil, &notInstalled{RabbitMQ, "its MQTT plugin is missing from " + libs[len(libs)-1], Install(RabbitMQ)}
		}
	}
	return in, nil
}

// rabbitmqConf is the node's rabbitmq.conf: the MQTT listener only (no AMQP one), and
// anonymous MQTT clients logged in as guest from any address (a client in a network
// namespace of its own is not on the broker's loopback).
func rabbitmqConf(host string, port int) string {
	return fmt.Sprintf(`# written by mqblast: RabbitMQ's MQTT plugin on %[1]s port %[2]d
listeners.tcp = none
mqtt.listeners.tcp.default = %[1]s:%[2]d
mqtt.allow_anonymous = true
loopback_users.guest = false
log.file.level = warning
`, bracket(host), port)
}

// bracket puts an IPv6 address in brackets, as rabbitmq.conf's listeners want it.
func bracket(host string) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]"
	}
	return host
}

// planRabbitMQ plans rabbitmq.conf, enabled_plugins and rabbitmq.sh, the script that
// runs the node in the foreground with everything in dir: its node name, Mnesia, logs,
// cookie (HOME) and an epmd of its own on a port of its own, started (without -daemon)
// in the script's process group before the node, which then uses it rather than starting
// a daemon that would outlive it. The Mnesia directory is emptied at each start: every
// start is a fresh broker.
func (in *Installation) planRabbitMQ(c Config) (*Start, error) {
	if c.FreePort == nil {
		return nil, fmt.Errorf("BUG: brokers: RabbitMQ needs Config.FreePort")
	}
	epmdPort, err := c.FreePort()
	if err != nil {
		return nil, fmt.Errorf("no free port for epmd: %w", err)
	}
	distPort, err := c.FreePort()
	if err != nil {
		return nil, fmt.Errorf("no free port for the Erlang distribution: %w", err)
	}
	st := &Start{Dir: c.Dir, Log: filepath.Join(c.Dir, "rabbit.log")}
	st.Files = []File{
		{"rabbitmq.conf", rabbitmqConf(c.Host, c.Port), 0o644},
		{"enabled_plugins", "[rabbitmq_mqtt].\n", 0o644},
	}
	q := Quote
	script := fmt.Sprintf(`#!/bin/sh
# written by mqblast: RabbitMQ %[1]s with its MQTT plugin on %[2]s port %[3]d, in the
# foreground, with an epmd of its own (port %[4]d) in this process group.
dir=%[5]s
export HOME="$dir" RABBITMQ_NODENAME="mqb-$$@localhost" RABBITMQ_DIST_PORT=%[6]d
export ERL_EPMD_PORT=%[4]d ERL_EPMD_ADDRESS=127.0.0.1
export RABBITMQ_CONFIG_FILE=%[7]s RABBITMQ_ENABLED_PLUGINS_FILE=%[8]s
export RABBITMQ_CONF_ENV_FILE="$dir/rabbitmq-env.conf" RABBITMQ_ADVANCED_CONFIG_FILE="$dir/advanced.config"
export RABBITMQ_MNESIA_BASE="$dir/mnesia" RABBITMQ_LOG_BASE="$dir/log" RABBITMQ_LOGS=%[9]s RABBITMQ_PID_FILE="$dir/rabbitmq.pid"
export RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
cd "$dir" || exit 1
rm -rf "$dir/mnesia"
%[10]s &
epmd=$!
i=0
until %[10]s -names >/dev/null 2>&1; do
	i=$((i + 1))
	if [ $i -gt 200 ] || ! kill -0 $epmd 2>/dev/null; then
		echo "epmd does not answer on port $ERL_EPMD_PORT" >&2
		kill $epmd 2>/dev/null
		exit 1
	fi
	sleep 0.05
done
%[11]s &
rmq=$!
trap 'kill -TERM $rmq 2>/dev/null' TERM INT
wait $rmq
st=$?
if kill -0 $rmq 2>/dev/null; then
	wait $rmq
	st=$?
fi
kill $epmd 2>/dev/null
wait $epmd 2>/dev/null
exit $st
`, in.Version, c.Host, c.Port, epmdPort, q(c.Dir), distPort, q(st.path("rabbitmq.conf")), q(st.path("enabled_plugins")), q(st.Log), q(in.epmd), q(in.bin))
	st.Files = append(st.Files, File{"rabbitmq.sh", script, 0o755})
	st.Line = "exec /bin/sh " + q(st.path("rabbitmq.sh"))
	return st, nil
}
