package brokers

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// gmqttVersion is the gmqtt release that builds with today's Go (its go.mod says go 1.14;
// its go.sum is complete).
const gmqttVersion = "v0.5.0"

// gmqttBin is where scripts/install-brokers.sh builds gmqttd.
func gmqttBin() string { return filepath.Join(CacheDir(), "gmqtt", "gmqttd") }

func findGMQTT() (*Installation, error) {
	bin := gmqttBin()
	if _, err := os.Stat(bin); err != nil {
		p, err := exec.LookPath("gmqttd")
		if err != nil {
			return nil, &notInstalled{GMQTT, "no " + bin + " and no gmqttd on PATH", Install(GMQTT)}
		}
		bin = p
	}
	in := &Installation{Kind: GMQTT, StartTimeout: StartTimeout(GMQTT), bin: bin}
	if b, err := os.ReadFile(filepath.Join(filepath.Dir(bin), "VERSION")); err == nil {
		in.Version = strings.TrimSpace(string(b))
	}
	return in, nil
}

// gmqttConf is gmqttd.yml: one TCP listener, sessions in memory, no API server and no
// plugins (the defaults listen on fixed ports: 8082 for Prometheus, 8901-8902 for
// federation).
func gmqttConf(host string, port int) string {
	return fmt.Sprintf(`# written by mqblast: gmqtt on %[1]s port %[2]d
listeners:
  - address: %[3]s
persistence:
  type: memory
plugin_order: []
log:
  level: warn
  format: text
`, host, port, strconv.Quote(net.JoinHostPort(host, strconv.Itoa(port))))
}

func (in *Installation) planGMQTT(c Config) *Start {
	st := &Start{Dir: c.Dir, Files: []File{{"gmqttd.yml", gmqttConf(c.Host, c.Port), 0o644}}}
	st.Line = fmt.Sprintf("cd %s && exec %s start -c %s", Quote(c.Dir), Quote(in.bin), Quote(st.path("gmqttd.yml")))
	return st
}
