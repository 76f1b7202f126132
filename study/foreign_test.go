package study

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mqblast/mqblast/internal/brokers"
	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/tuning"
)

// TestStudyForeignBrokers: a study of RabbitMQ, aedes and gmqtt, each started by the study
// (under mqblast guard, with the configuration internal/brokers writes) for its cell and
// stopped after it. Every cell runs, its broker delivers, the process sampled is the
// broker's own (beam.smp, node, gmqttd), and after the study nothing listens on a broker's
// port, nor on RabbitMQ's epmd port.
func TestStudyForeignBrokers(t *testing.T) {
	for _, k := range brokers.Kinds {
		testbroker.NeedForeign(t, k)
	}
	exe := mqblastBin(t)
	profiles := `["local"]`
	if emulatorAvailable() { // behind the emulator too: the broker's process found in its namespace
		profiles = `["local", "optimal"]`
	}
	c, err := Parse("foreign.json", ".", []byte(`{
  "name": "foreign",
  "brokers": [{"name": "rabbit", "type": "rabbitmq"}, {"name": "aedes", "type": "aedes"}, {"name": "gmqtt", "type": "gmqtt"}],
  "scenarios": [{"scenario": "quick-p2p-100", "set": {"publishers.client_count": 10, "subscribers.client_count": 10, "parameters.drain_sec": 0.5}}],
  "repetitions": 1, "duration_sec": 1, "warmup_sec": 0.3, "profiles": `+profiles+`
}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Brokers[0].StartTimeout != brokers.StartTimeout(brokers.RabbitMQ) {
		t.Errorf("rabbitmq's start timeout %v, want %v", c.Brokers[0].StartTimeout, brokers.StartTimeout(brokers.RabbitMQ))
	}
	dir := t.TempDir()
	var progress strings.Builder
	var mu sync.Mutex
	comm := map[string]string{}
	opt := Options{Dir: dir, Exe: exe, Command: testCommand(exe), Progress: &progress, OnCellStart: func(rec *CellRecord, pid int) {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		mu.Lock()
		comm[rec.Broker+" "+rec.Profile] = strings.TrimSpace(string(b))
		mu.Unlock()
	}}
	ix, err := Run(context.Background(), c, opt)
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	want := map[string]string{"rabbit": "beam.smp", "aedes": "node", "gmqtt": "gmqttd"}
	for _, r := range ix.Cells {
		if r.Status != StatusOK {
			log, _ := os.ReadFile(filepath.Join(dir, "brokers", r.Broker, "broker.log"))
			t.Errorf("%s: %s %s\nbroker.log: %s", r.Broker, r.Status, r.Error, log)
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, r.Result))
		if err != nil {
			t.Fatal(err)
		}
		var res result.Result
		if err := json.Unmarshal(b, &res); err != nil {
			t.Fatal(err)
		}
		m := res.Messages
		got := comm[r.Broker+" "+r.Profile]
		t.Logf("%s %s: published %d, received %d, lost %d, duplicated %d; broker process %s", r.Broker, r.Profile, m.Published, m.Received, m.Lost, m.Duplicated, got)
		if m.Received == 0 {
			t.Errorf("%s %s: nothing arrived of %d published", r.Broker, r.Profile, m.Published)
		}
		if got != want[r.Broker] {
			t.Errorf("%s %s: the process sampled is %q, want %s", r.Broker, r.Profile, got, want[r.Broker])
		}
	}
	ports := map[string]string{}
	for _, b := range ix.Brokers {
		if !strings.HasPrefix(b.Start, "exec /bin/sh ") && !strings.HasPrefix(b.Start, "cd ") {
			t.Errorf("broker %s: start line %q", b.Name, b.Start)
		}
		_, port, _ := net.SplitHostPort(b.Address)
		ports[b.Name+" mqtt"] = port
	}
	sh, err := os.ReadFile(filepath.Join(dir, "brokers", "rabbit", "rabbitmq.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`ERL_EPMD_PORT=(\d+)`).FindSubmatch(sh); m != nil {
		ports["rabbit epmd"] = string(m[1])
	} else {
		t.Errorf("rabbitmq.sh sets no ERL_EPMD_PORT:\n%s", sh)
	}
	for what, port := range ports {
		n, _ := strconv.Atoi(port)
		if pid, err := tuning.FindListener(context.Background(), n); err == nil {
			b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
			t.Errorf("%s port %d: still listened on by pid %d (%s) after the study", what, n, pid, strings.TrimSpace(string(b)))
		}
	}
}

// TestStudyForeignNotInstalled: a study naming brokers that are not installed is refused
// before anything runs (no directory made), each with the command that installs it.
func TestStudyForeignNotInstalled(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // an empty cache: neither aedes nor gmqttd there
	t.Setenv("PATH", "/usr/bin:/bin")
	c, err := Parse("missing.json", ".", []byte(`{
  "brokers": [{"name": "a", "type": "aedes"}, {"name": "g", "type": "gmqtt"}],
  "scenarios": [{"scenario": "quick-p2p-100"}]
}`))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "study")
	_, err = Run(context.Background(), c, Options{Dir: dir, Exe: "/nonexistent/mqblast", Command: testCommand("/nonexistent/mqblast")})
	if !errors.Is(err, brokers.ErrNotInstalled) {
		t.Fatalf("Run: %v, want ErrNotInstalled", err)
	}
	for _, want := range []string{"broker a: aedes is not installed", "npm install --prefix", "aedes@1",
		"broker g: gmqtt is not installed", "scripts/install-brokers.sh gmqtt"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not say %q:\n%v", want, err)
		}
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused study made its directory: %v", err)
	}
}
