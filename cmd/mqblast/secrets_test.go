package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/netnstest"
	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/run"
)

// cmdlineWatch polls every process's command line (what ps shows) until end, and records
// those that hold secret, the mqblast workers, and the runs given --set server.password=.
type cmdlineWatch struct {
	mu      sync.Mutex
	leaks   map[int]string
	workers map[int]bool
	cells   map[int]bool
	stop    chan struct{}
	done    chan struct{}
}

func watchCmdlines(secret string) *cmdlineWatch {
	w := &cmdlineWatch{leaks: map[int]string{}, workers: map[int]bool{}, cells: map[int]bool{},
		stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			ents, _ := os.ReadDir("/proc")
			for _, e := range ents {
				pid, err := strconv.Atoi(e.Name())
				if err != nil {
					continue
				}
				b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
				args := strings.ReplaceAll(string(b), "\x00", " ")
				w.mu.Lock()
				if strings.Contains(args, secret) {
					w.leaks[pid] = args
				}
				if strings.HasSuffix(args, " child ") { // a worker, or the run behind the emulator
					w.workers[pid] = true
				} else if strings.Contains(args, " run --spec ") { // a study's cell
					w.cells[pid] = true
				}
				w.mu.Unlock()
			}
			select {
			case <-w.stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return w
}

// end stops the watch and forgets the processes with the command line the test wrote
// (argv; nil: none): the test's own process, and its forks between their fork and their
// exec, which show their parent's command line until they exec. No child of it can have
// that command line for longer: a run that started itself again with its own argv would
// never end.
func (w *cmdlineWatch) end(argv []string) {
	close(w.stop)
	<-w.done
	if argv == nil {
		return
	}
	own := strings.Join(argv, " ")
	for pid, args := range w.leaks {
		if strings.TrimSpace(args) == own {
			delete(w.leaks, pid)
			delete(w.cells, pid)
		}
	}
}

// check fails t when a command line held the secret, or when the watch saw fewer than
// cells runs of a study's cell (run --spec) and workers child processes (a worker, the run
// behind the emulator), which have the password (it would prove nothing).
func (w *cmdlineWatch) check(t *testing.T, cells, workers int) {
	t.Helper()
	for pid, args := range w.leaks {
		t.Errorf("the password is on the command line of process %d: %s", pid, args)
	}
	// A process between its fork and its exec shows its parent's command line: a run may
	// count twice.
	if len(w.cells) < cells || len(w.workers) < workers {
		t.Errorf("saw %d runs given the password and %d workers, want %d and %d: the watch proves nothing",
			len(w.cells), len(w.workers), cells, workers)
	}
}

// TestStudySecretStaysOut runs a study whose campaign gives the broker password against a
// Mosquitto that refuses anyone else, its cells in two worker processes each: every cell
// logs in (so the password reached the clients), and the password is in no file the study
// writes (study.json, study.html, the cells' results and logs), in its output or its
// --dry-run, nor on the command line of any process while it runs (ps).
func TestStudySecretStaysOut(t *testing.T) {
	const user = "bench"
	secret := fmt.Sprintf("pw-%d-Zq", time.Now().UnixNano())
	m := testbroker.StartMosquitto(t, testbroker.Options{Users: map[string]string{user: secret}})
	dir := t.TempDir()
	campaign := filepath.Join(dir, "c.json")
	if err := os.WriteFile(campaign, []byte(fmt.Sprintf(`{"name": "secret",
  "brokers": [{"name": "m", "address": %q}],
  "scenarios": [{"scenario": "quick-p2p-100", "label": "p2p",
    "set": {"server.username": %q, "server.password": %q, "parameters.publish_rate": 20},
    "sweep": {"publishers.qos": [0, 1]}}],
  "repetitions": 1, "duration_sec": 2, "warmup_sec": 0.5}`, m.Addr, user, secret)), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "study")

	dry := runBin(t, "study", campaign, "--out", out, "--dry-run", "--run-arg=--procs=2")
	if dry.code != 0 || !strings.Contains(dry.stdout, "server.password=<redacted>") {
		t.Errorf("--dry-run: exit %d, want every cell's command with the marker\n%s%s", dry.code, dry.stdout, dry.stderr)
	}

	w := watchCmdlines(secret)
	r := runBin(t, "study", campaign, "--out", out, "--no-check", "--run-arg=--procs=2")
	w.end(nil)
	if r.code != 0 {
		t.Fatalf("study: exit %d\n%s", r.code, r.stderr)
	}
	w.check(t, 2, 4)
	for name, text := range map[string]string{"--dry-run": dry.stdout + dry.stderr, "the study's output": r.stdout + r.stderr} {
		if strings.Contains(text, secret) {
			t.Errorf("%s shows the password", name)
		}
	}
	var files []string
	_ = filepath.WalkDir(out, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files = append(files, path)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Error(err)
		}
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("%s holds the password", path)
		}
		return nil
	})
	var ix struct {
		Campaign struct {
			Scenarios []struct {
				Set []struct {
					Path, Value string
				} `json:"set"`
			} `json:"scenarios"`
		} `json:"campaign"`
		Cells []struct {
			Status string `json:"status"`
			Spec   string `json:"spec"`
		} `json:"cells"`
	}
	b, err := os.ReadFile(filepath.Join(out, "study.json"))
	if err != nil || json.Unmarshal(b, &ix) != nil || len(ix.Cells) != 2 {
		t.Fatalf("study.json: %v\n%s", err, b)
	}
	for _, c := range ix.Cells {
		sp, err := os.ReadFile(filepath.Join(out, c.Spec))
		if c.Status != "ok" || err != nil || !bytes.Contains(sp, []byte("server.password=<redacted>")) {
			t.Errorf("cell %s, spec %s (%v): want ok and the marker\n%s", c.Status, c.Spec, err, sp)
		}
	}
	for _, want := range []string{"study.json", "study.html", "c0001.json", "c0001.log", "c0002.json", "c0002.log"} {
		found := false
		for _, f := range files {
			found = found || filepath.Base(f) == want
		}
		if !found {
			t.Errorf("the study wrote no %s (files: %v)", want, files)
		}
	}
	if sets := ix.Campaign.Scenarios[0].Set; len(sets) != 3 || sets[1].Path != "server.password" || sets[1].Value != "<redacted>" {
		t.Errorf("study.json's campaign sets %+v, want the marker for the password", sets)
	}

	// A password on a cell's command line (--run-arg) is refused before anything runs.
	r = runBin(t, "study", campaign, "--out", filepath.Join(dir, "other"), "--run-arg=--set=server.password="+secret)
	if r.code != exitUsage || strings.Contains(r.stderr, secret) || !strings.Contains(r.stderr, "$"+run.PasswordEnv) {
		t.Errorf("--run-arg with a password: exit %d\n%s", r.code, r.stderr)
	}
}

// TestPasswordWithoutUsername: MQTT 3.1.1 sends a password only with a username
// ([MQTT-3.1.2-22]). A run or a study that gives one without the other is refused before
// it connects, naming the rule and the fix; $MQBLAST_PASSWORD is not taken by a run that
// gives no username, which then connects to a broker that lets anyone in.
func TestPasswordWithoutUsername(t *testing.T) {
	t.Parallel()
	const secret = "hunter2-Xy"
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"run", "quick-p2p-100", "--broker", m.Addr, "--set", "server.password=" + secret}, exitInvalid},
		{[]string{"conn", "-H", "127.0.0.1", "-p", strings.Split(m.Addr, ":")[1], "-c", "5", "-P", secret}, exitUsage},
	} {
		r := runBin(t, tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, "[MQTT-3.1.2-22]") || !strings.Contains(r.stderr, "give server.username") ||
			strings.Contains(r.stderr, secret) || strings.Contains(r.stderr, "connecting") {
			t.Errorf("%s: exit %d, want %d before connecting, the rule and the fix\n%s", tc.args[0], r.code, tc.code, r.stderr)
		}
	}
	pwFile := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pwFile, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := runBin(t, "run", "quick-p2p-100", "--broker", m.Addr, "--password-file", pwFile); r.code != exitInvalid ||
		!strings.Contains(r.stderr, "[MQTT-3.1.2-22]") {
		t.Errorf("--password-file without a username: exit %d\n%s", r.code, r.stderr)
	}
	campaign := filepath.Join(t.TempDir(), "c.json")
	_ = os.WriteFile(campaign, []byte(`{"brokers": [{"name": "m", "address": "`+m.Addr+`"}],
  "scenarios": [{"scenario": "quick-p2p-100", "set": {"server.password": "`+secret+`"}}]}`), 0o600)
	if r := runBin(t, "study", campaign, "--dry-run"); r.code != exitInvalid || !strings.Contains(r.stderr, "[MQTT-3.1.2-22]") ||
		strings.Contains(r.stdout+r.stderr, secret) {
		t.Errorf("study: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	c := exec.Command(mqblastBin(t), "run", "quick-p2p-100", "--broker", m.Addr, "--duration", "1s", "--set", "parameters.warmup_sec=0.2",
		"--procs", "2", "--format", "json")
	c.Env = append(os.Environ(), run.PasswordEnv+"="+secret)
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	err := c.Run()
	res := decodeResult(t, cliRun{stdout: stdout.String(), stderr: stderr.String()})
	if err != nil || res.Connections.Established != int64(res.Connections.Target) {
		t.Errorf("$%s without a username: %v, established %d of %d\n%s", run.PasswordEnv, err,
			res.Connections.Established, res.Connections.Target, stderr.String())
	}
	if !strings.Contains(stderr.String(), "$"+run.PasswordEnv+" is set, but this run gives no username") {
		t.Errorf("no notice that the password is not sent:\n%s", stderr.String())
	}
}

// TestForeignDocumentPassword: report and compare of a result document written elsewhere
// that holds a password (in its scenario, in a broker address) show the marker instead.
func TestForeignDocumentPassword(t *testing.T) {
	const secret = "hunter2-Fd"
	b, err := os.ReadFile(filepath.Join("..", "..", "report", "testdata", "p2p.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	doc["scenario"].(map[string]any)["server"] = map[string]any{"hostname": "h", "port": 1883, "username": "u", "password": secret}
	doc["broker"] = []string{"mqtt://u:" + secret + "@h:1883"}
	b, _ = json.Marshal(doc)
	dir := t.TempDir()
	foreign := filepath.Join(dir, "foreign.json")
	if err := os.WriteFile(foreign, b, 0o644); err != nil {
		t.Fatal(err)
	}
	html := filepath.Join(dir, "r.html")
	chtml := filepath.Join(dir, "c.html")
	for _, args := range [][]string{
		{"report", foreign}, {"report", foreign, "--html", html},
		{"compare", foreign, filepath.Join("..", "..", "report", "testdata", "p2p.json")},
		{"compare", foreign, foreign, "--html", chtml},
	} {
		stdout, stderr, code := runMQ(t, args...)
		if code != exitOK || strings.Contains(stdout+stderr, secret) {
			t.Errorf("%v: exit %d, or the password shows:\n%s%s", args, code, stdout, stderr)
		}
	}
	for _, f := range []string{html, chtml} {
		page, err := os.ReadFile(f)
		if err != nil || bytes.Contains(page, []byte(secret)) || !bytes.Contains(page, []byte("redacted")) {
			t.Errorf("%s: %v; it shows the password, or not the marker", f, err)
		}
	}
}

// TestNetPasswordNotInArgv: `run --net` runs its command line again in the emulator's
// client namespace; a password given there with --set reaches that run (and its workers)
// through the environment, not their command lines.
func TestNetPasswordNotInArgv(t *testing.T) {
	const user = "bench"
	secret := fmt.Sprintf("pw-%d-Nt", time.Now().UnixNano())
	runNetSecret(t, secret, netBrokerCmd(t, user, secret), "quick-p2p-100",
		"--set", "server.username="+user, "--set", "server.password="+secret)
}

// TestNetGroupPasswordNotInArgv: a group's own password given with --set reaches the run
// behind the emulator and its workers through their environment too: the group's clients
// log in as its user (the run's own user has none).
func TestNetGroupPasswordNotInArgv(t *testing.T) {
	const user = "dev"
	secret := fmt.Sprintf("pw-%d-Ng", time.Now().UnixNano())
	file := filepath.Join(t.TempDir(), "devices.json")
	if err := os.WriteFile(file, []byte(`{"groups": [
	  {"name": "devices", "behaviours": ["publish", "subscribe"], "client_count": 4, "qos": 1, "topics": "d/$clientindex",
	   "filters": "d/$clientindex", "server": {"username": "`+user+`"}}],
	  "parameters": {"publish_rate": 10}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	runNetSecret(t, secret, netBrokerCmd(t, user, secret), file, "--set", "groups.devices.server.password="+secret)
}

// netBrokerCmd is --net-broker-cmd of a Mosquitto in the emulator's broker namespace that
// lets user in with password only.
func netBrokerCmd(t *testing.T, user, password string) string {
	t.Helper()
	netnstest.NeedRoot(t)
	mosq := testbroker.Need(t)
	dir := t.TempDir()
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte(user+":"+password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mosquitto_passwd", "-U", pw).CombinedOutput(); err != nil {
		t.Skipf("mosquitto_passwd: %v: %s", err, out)
	}
	conf := filepath.Join(dir, "m.conf")
	if err := os.WriteFile(conf, []byte("listener 1883 10.211.0.1\nuser root\nallow_anonymous false\npassword_file "+pw+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return "exec " + mosq + " -c " + conf
}

// runNetSecret runs scenario with args behind the emulator's local profile against the
// broker brokerCmd starts, in two workers, and checks that every client connected and
// that secret is in no process's command line but the user's and in no output.
func runNetSecret(t *testing.T, secret, brokerCmd, scenario string, args ...string) {
	t.Helper()
	w := watchCmdlines(secret)
	c := exec.Command(mqblastBin(t), append([]string{"run", scenario, "--net", "local", "--net-broker-cmd", brokerCmd,
		"--duration", "2s", "--set", "parameters.warmup_sec=0.5", "--procs", "2", "--no-check", "--format", "json"}, args...)...)
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	err := c.Wait()
	w.end(c.Args) // the user's own command line holds it
	res := decodeResult(t, cliRun{stdout: stdout.String(), stderr: stderr.String()})
	if err != nil || res.Connections.Established != int64(res.Connections.Target) {
		t.Fatalf("run --net: %v, established %d of %d, refused %v\n%s", err, res.Connections.Established,
			res.Connections.Target, res.Connections.Refused, stderr.String())
	}
	w.check(t, 0, 3) // the run behind the emulator and its two workers
	if strings.Contains(stdout.String()+stderr.String(), secret) {
		t.Error("the output shows the password")
	}
}
