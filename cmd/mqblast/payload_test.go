package main

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/result"
)

// silentBroker is a loopback listener that fails the test if anything connects to it
// before stop: a run refused as invalid opens no socket.
func silentBroker(t *testing.T) (addr string, stop func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln.Addr().String(), func() {
		_ = ln.(*net.TCPListener).SetDeadline(time.Now().Add(50 * time.Millisecond))
		if c, err := ln.Accept(); err == nil {
			c.Close()
			t.Error("a connection reached the broker: the invalid run opened a socket")
		}
		ln.Close()
	}
}

// TestPayloadTemplateInvalid: a template with an unknown placeholder is one line naming
// the file and the field, exit 3, before any socket opens, from run's flag and from a
// group's field; from pub's flag, the field and exit 2 (usage), as pub's other flags.
func TestPayloadTemplateInvalid(t *testing.T) {
	addr, stop := silentBroker(t)
	defer stop()
	check := func(exit int, want string, args ...string) {
		t.Helper()
		_, errOut, code := runMQ(t, args...)
		first, _, _ := strings.Cut(errOut, "\n")
		if code != exit || !strings.Contains(first, want) {
			t.Errorf("%q: exit %d, want %d and a line with %q:\n%s", args, code, exit, want, errOut)
		}
	}
	check(exitInvalid, `mqblast: quick-p2p-100: parameters.payload_template: {{clientid}} at byte 6: unknown placeholder (want one of client_id, `,
		"run", "quick-p2p-100", "--broker", addr, "--payload-template", `{"a":"{{clientid}}","s":{{seq}}}`)
	// A quick verb's flags are its usage, as a -s 5 is.
	check(exitUsage, `mqblast: pub: parameters.payload_template: {{rand_int 9 1}} at byte 0: rand_int takes two integers A B`,
		"pub", "-c", "1", "-t", "t/%i", "-H", strings.Split(addr, ":")[0], "-p", strings.Split(addr, ":")[1], "--payload-template", `{{rand_int 9 1}}`)
	check(exitInvalid, `mqblast: iot-fleet-10K: groups[0].payload_template: {{nope}} at byte 4: unknown placeholder`,
		"run", "iot-fleet-10K", "--broker", addr, "--set", "parameters.payload_template=ok {{seq}}",
		"--set", `groups.devices.payload_template=x = {{nope}}`)
}

// TestJSONTemplateMeasured: a JSON template measured by its mark at 3.1.1 and 5.0, and by
// its Correlation Data (measure property, a template without a mark) at 5.0, against a
// real Mosquitto. A subscriber outside mqblast (mosquitto_sub) parses every message as JSON
// and sees its per-message fields change; mqblast counts each run as it counts the same run
// with the binary header: every copy received and measured, none lost or duplicated,
// latency of the same order; the result names the carrier.
func TestJSONTemplateMeasured(t *testing.T) {
	t.Parallel() // its own broker and runs
	subBin := needMosquittoSub(t)
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	host, port, _ := strings.Cut(m.Addr, ":")
	const fields = `{"device":"{{client_id}}","i":{{client_index}},"seq":{{seq}},"ts":{{unix_ms}},"at":"{{rfc3339}}",` +
		`"temp":{{rand_float 18.0 31.5}},"state":"{{choice idle|run|fault}}"`
	run := func(proto, measure, tpl string, more ...string) *result.Result {
		t.Helper()
		r := runBin(t, append([]string{"run", "quick-p2p-100", "--broker", m.Addr, "--no-check", "--format", "json",
			"--payload-template", tpl, "--set", "parameters.measure=" + measure,
			"--set", "parameters.duration_sec=3", "--set", "parameters.warmup_sec=0", "--set", "parameters.publish_rate=10",
			"--set", "publishers.protocol_version=" + proto, "--set", "subscribers.protocol_version=" + proto}, more...)...)
		res := decodeResult(t, r)
		ms := res.Messages
		if ms.Published == 0 || ms.Received != ms.Published || ms.Lost != 0 || ms.Duplicated != 0 || ms.Unmeasured != 0 ||
			res.LatencyUS.Count != ms.Received {
			t.Errorf("MQTT %s, measure %s: published %d, received %d, lost %d, duplicated %d, unmeasured %d, latency count %d",
				proto, measure, ms.Published, ms.Received, ms.Lost, ms.Duplicated, ms.Unmeasured, res.LatencyUS.Count)
		}
		if want := []result.GroupMeasurement{{Group: "publishers", Carrier: measure, Payload: "template"}}; !slices.Equal(res.Measurement, want) {
			t.Errorf("MQTT %s: measurement %+v, want %+v", proto, res.Measurement, want)
		}
		return res
	}
	for _, c := range []struct {
		name, proto, sub, measure, tpl string
		more                           []string
	}{
		{"3.1.1 mark", "3", "mqttv311", "mark", fields + `,"mark":"{{mark}}"}`, nil},
		{"5.0 mark", "5", "mqttv5", "mark", fields + `,"mark":"{{mark}}"}`, nil},
		{"5.0 property", "5", "mqttv5", "property", fields + `}`, nil},
		// The group's own Correlation Data: the mark goes in a User Property.
		{"5.0 user property", "5", "mqttv5", "property", fields + `}`,
			[]string{"--set", `publishers.publish_properties=[{"name":"correlation_data","value":"app"}]`}},
	} {
		header := run(c.proto, "header", c.tpl, c.more...)
		out := startOutside(t, subBin, "-h", host, "-p", port, "-V", c.sub, "-q", "1", "-t", "quick/p2p/#", "-F", "%p")
		own := run(c.proto, c.measure, c.tpl, c.more...)

		seqs, devices, states := map[int]bool{}, map[string]bool{}, map[string]bool{}
		lines := strings.Split(strings.TrimSpace(out()), "\n")
		for _, line := range lines {
			var msg struct {
				Device, At, State, Mark string
				I, Seq                  int
				TS                      int64
				Temp                    float64
			}
			if err := json.Unmarshal([]byte(line), &msg); err != nil {
				t.Fatalf("%s: the outside subscriber cannot parse %q: %v", c.name, line, err)
			}
			markOK := len(msg.Mark) == 52 && strings.HasPrefix(msg.Mark, "MQB1")
			if c.measure == "property" {
				markOK = msg.Mark == ""
			}
			if !markOK || msg.Temp < 18 || msg.Temp > 31.5 || msg.Device != "quick-pub-"+strconv.Itoa(msg.I) || msg.TS == 0 {
				t.Fatalf("%s: %s", c.name, line)
			}
			seqs[msg.Seq], devices[msg.Device], states[msg.State] = true, true, true
		}
		if int64(len(lines)) != own.Messages.Published || len(seqs) < 20 || len(devices) != 100 || len(states) != 3 {
			t.Errorf("%s: the outside subscriber parsed %d messages of %d published: %d sequence numbers, %d devices, %d states",
				c.name, len(lines), own.Messages.Published, len(seqs), len(devices), len(states))
		}
		t.Logf("%s: latency p50 header %d µs, %s %d µs; p99 %d, %d", c.name, header.LatencyUS.P50, c.measure, own.LatencyUS.P50,
			header.LatencyUS.P99, own.LatencyUS.P99)
		if own.LatencyUS.P50 > 3*header.LatencyUS.P50+2000 {
			t.Errorf("%s: median latency %d µs, by header %d µs", c.name, own.LatencyUS.P50, header.LatencyUS.P50)
		}
	}
}

// TestSizeWeightsZero: a size distribution whose weights are all zero is one line naming
// the file and the field, exit 3, before any socket opens.
func TestSizeWeightsZero(t *testing.T) {
	addr, stop := silentBroker(t)
	defer stop()
	file := filepath.Join(t.TempDir(), "sizes.json")
	if err := os.WriteFile(file, []byte(`{"name": "sizes", "type": "Point-To-Point",
	  "publishers": {"topics": "t/$clientindex"}, "subscribers": {"topics": "t/$clientindex"},
	  "parameters": {"duration_sec": 2, "payload_size": "1KB:0,10KB:0"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runMQ(t, "run", file, "--broker", addr)
	first, _, _ := strings.Cut(errOut, "\n")
	want := file + `: parameters.payload_size: "1KB:0,10KB:0": the weights are all zero`
	if code != exitInvalid || !strings.Contains(first, want) {
		t.Errorf("exit %d, want %d and a line with %q:\n%s", code, exitInvalid, want, errOut)
	}
}

// TestSizeShares: payload_size as a weighted list: an outside subscriber (mosquitto_sub,
// printing each payload's length) sees each size's share within 2 points of its weight, and
// mqblast counts every message as with one size.
func TestSizeShares(t *testing.T) {
	t.Parallel() // its own broker and run
	subBin := needMosquittoSub(t)
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	host, port, _ := strings.Cut(m.Addr, ":")
	out := startOutside(t, subBin, "-h", host, "-p", port, "-q", "1", "-t", "quick/p2p/#", "-F", "%l")
	r := runBin(t, "run", "quick-p2p-100", "--broker", m.Addr, "--no-check", "--format", "json",
		"--set", "parameters.payload_size=100B:50,1KB:30,10KB:20,2KB:0",
		"--set", "parameters.duration_sec=4", "--set", "parameters.warmup_sec=0", "--set", "parameters.publish_rate=25")
	res := decodeResult(t, r)
	ms := res.Messages
	if ms.Published < 9000 || ms.Received != ms.Published || ms.Lost != 0 || ms.Unmeasured != 0 || res.LatencyUS.Count != ms.Received {
		t.Errorf("published %d, received %d, lost %d, unmeasured %d, latency count %d", ms.Published, ms.Received, ms.Lost, ms.Unmeasured, res.LatencyUS.Count)
	}
	counts := map[string]int{}
	lines := strings.Fields(out())
	for _, l := range lines {
		counts[l]++
	}
	if int64(len(lines)) != ms.Published {
		t.Errorf("the outside subscriber saw %d messages of %d", len(lines), ms.Published)
	}
	for size, want := range map[string]float64{"100": 50, "1000": 30, "10000": 20} {
		got := 100 * float64(counts[size]) / float64(len(lines))
		t.Logf("%s bytes: %.2f %% (asked %.0f %%)", size, got, want)
		if got < want-2 || got > want+2 {
			t.Errorf("%s bytes: %.2f %% of the messages, asked %.0f %%", size, got, want)
		}
	}
	if len(counts) != 3 {
		t.Errorf("sizes seen: %v, want 100, 1000 and 10000 only", counts)
	}
}

// TestPayloadFile: payloads from files against a real Mosquitto. A JSON-lines file replayed
// as it is (measure none): an outside subscriber receives exactly its lines, in turn; mqblast
// counts every copy as unmeasured and none as lost. A directory of JSON payloads with a mark
// each, drawn at random (measure mark): every file's payload arrives, and mqblast measures
// every copy, none lost.
func TestPayloadFile(t *testing.T) {
	t.Parallel() // its own broker and runs
	subBin := needMosquittoSub(t)
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	host, port, _ := strings.Cut(m.Addr, ":")
	dir := t.TempDir()
	lines := []string{`{"t":21.5,"unit":"C"}`, `{"t":70.1,"unit":"F"}`, `{"alarm":true}`, `{"door":"open"}`, `{"rssi":-71}`}
	jsonl := filepath.Join(dir, "replay.jsonl")
	if err := os.WriteFile(jsonl, []byte(strings.Join(lines, "\n")+"\n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	files := filepath.Join(dir, "files")
	if err := os.Mkdir(files, 0o700); err != nil {
		t.Fatal(err)
	}
	for i, kind := range []string{"temp", "door", "power"} {
		body := `{"kind":"` + kind + `","seq":{{seq}},"mark":"{{mark}}"}`
		if err := os.WriteFile(filepath.Join(files, strconv.Itoa(i)+".json"), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	outside := func(args ...string) (string, *result.Result) {
		t.Helper()
		out := startOutside(t, subBin, "-h", host, "-p", port, "-q", "1", "-t", "quick/p2p/#", "-F", "%p")
		r := runBin(t, append([]string{"run", "quick-p2p-100", "--broker", m.Addr, "--no-check", "--format", "json",
			"--set", "parameters.duration_sec=3", "--set", "parameters.warmup_sec=0"}, args...)...)
		return out(), decodeResult(t, r)
	}

	got, res := outside("--payload-file", jsonl, "--set", "parameters.measure=none")
	ms := res.Messages
	seen := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(got), "\n") {
		seen[l]++
	}
	for _, l := range lines {
		if n := seen[l]; n < int(ms.Published)/5-100 || n > int(ms.Published)/5+100 {
			t.Errorf("replayed %s %d times of %d messages, want a fifth (in turn)", l, n, ms.Published)
		}
	}
	if len(seen) != len(lines) {
		t.Errorf("the outside subscriber saw %d payloads, want the file's %d lines: %v", len(seen), len(lines), seen)
	}
	if ms.Published == 0 || ms.Unmeasured != ms.Published || ms.Lost != 0 || ms.Expected != 0 || res.LatencyUS.Count != 0 {
		t.Errorf("replayed unmeasured: published %d, unmeasured %d, lost %d, expected %d, latency count %d",
			ms.Published, ms.Unmeasured, ms.Lost, ms.Expected, res.LatencyUS.Count)
	}
	if want := []result.GroupMeasurement{{Group: "publishers", Carrier: "none", Payload: "file"}}; !slices.Equal(res.Measurement, want) {
		t.Errorf("measurement %+v, want %+v", res.Measurement, want)
	}

	got, res = outside("--payload-file", files, "--set", "parameters.measure=mark", "--set", "parameters.payload_order=random")
	ms = res.Messages
	kinds := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(got), "\n") {
		var msg struct{ Kind, Mark string }
		if err := json.Unmarshal([]byte(l), &msg); err != nil || len(msg.Mark) != 52 {
			t.Fatalf("%q: %v", l, err)
		}
		kinds[msg.Kind]++
	}
	if len(kinds) != 3 || ms.Published == 0 || ms.Received != ms.Published || ms.Lost != 0 || ms.Unmeasured != 0 || res.LatencyUS.Count != ms.Received {
		t.Errorf("files by mark: kinds %v; published %d, received %d, lost %d, unmeasured %d, latency count %d",
			kinds, ms.Published, ms.Received, ms.Lost, ms.Unmeasured, res.LatencyUS.Count)
	}
}

// needMosquittoSub returns mosquitto_sub's path, or skips the test without it (fails it
// under CI=true).
func needMosquittoSub(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("mosquitto_sub")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("mosquitto_sub is not installed (apt-get install -y mosquitto-clients)")
		}
		t.Skip("no mosquitto_sub (apt-get install -y mosquitto-clients)")
	}
	return bin
}

// startOutside starts mosquitto_sub (bin) with args, a subscriber outside mqblast, and
// gives it time to subscribe; out stops it, half a second later (the last copies), and
// returns what it printed.
func startOutside(t *testing.T, bin string, args ...string) (out func() string) {
	t.Helper()
	sub := exec.Command(bin, args...)
	var buf bytes.Buffer
	sub.Stdout = &buf
	if err := sub.Start(); err != nil {
		t.Fatal(err)
	}
	// Ended with the test also when it stops before reading the output: mosquitto_sub
	// reconnects for ever, and CI found two of them still running after the suite.
	t.Cleanup(func() { _ = sub.Process.Kill(); _ = sub.Wait() })
	time.Sleep(500 * time.Millisecond) // its SUBSCRIBE before the run's first message
	return func() string {
		time.Sleep(500 * time.Millisecond)
		_ = sub.Process.Kill()
		_ = sub.Wait()
		return buf.String()
	}
}

// TestSubFindsMarks: mqblast sub measures the copies of another process's publishers that
// measure by mark (pub with a JSON template): every copy measured, none unmeasured.
func TestSubFindsMarks(t *testing.T) {
	t.Parallel() // its own broker and runs
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	host, port, _ := strings.Cut(m.Addr, ":")
	bin := mqblastBin(t)
	subDone := make(chan cliRun, 1)
	go func() {
		r, err := execBin(bin, nil, "sub", "-H", host, "-p", port, "-t", "marks/#", "-c", "2", "--duration", "6s", "--no-check", "--format", "json")
		if err != nil {
			r.stderr += err.Error()
		}
		subDone <- r
	}()
	time.Sleep(1500 * time.Millisecond) // the subscribers connected and subscribed
	pub := decodeResult(t, runBin(t, "pub", "-H", host, "-p", port, "-t", "marks/%i", "-c", "5", "-I", "10", "--duration", "3s", "--no-check",
		"--format", "json", "--run-id", "00aa", "--payload-template", `{"s":{{seq}},"m":"{{mark}}"}`, "--set", "parameters.measure=mark"))
	sub := decodeResult(t, <-subDone)
	if pub.Messages.Published == 0 || sub.Messages.Received != 2*pub.Messages.Published || sub.Messages.Unmeasured != 0 ||
		sub.LatencyUS.Count != sub.Messages.Received {
		t.Errorf("pub published %d; sub received %d (want twice that), unmeasured %d, latency count %d",
			pub.Messages.Published, sub.Messages.Received, sub.Messages.Unmeasured, sub.LatencyUS.Count)
	}
}
