package run

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mqblast/mqblast/internal/secret"
	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/run/spec"
)

// perUserFile is a mixed scenario of two groups of MQTT 5 devices, each logging in as a
// user of its own that the broker's ACL lets publish and subscribe under devices/USER/
// only: alice's on the run's broker (a server of credentials alone), bob's on a server of
// its own (the same Mosquitto). The run's user, ops, may use neither's topics.
const perUserFile = `{
  "name": "per-user",
  "groups": [
    {"name": "alice", "behaviours": ["publish", "subscribe"], "client_count": 3, "protocol_version": 5, "qos": 1,
     "topics": "devices/alice/$clientindex", "filters": "devices/alice/#",
     "server": {"username": "alice", "password": %q}},
    {"name": "bob", "behaviours": ["publish", "subscribe"], "client_count": 2, "protocol_version": 5, "qos": 1,
     "topics": "devices/bob/$clientindex", "filters": "devices/bob/#",
     "server": {"hostname": %q, "port": %s, "username": "bob", "password": %q}}
  ],
  "server": {"username": "ops", "password": "pw-ops"},
  "parameters": {"duration_sec": 2, "warmup_sec": 0.5, "drain_sec": 1, "publish_rate": 10}
}`

// TestGroupCredentials: Mosquitto set up as operators do, a password file (mosquitto_passwd)
// of three users and an ACL that gives each its own topics (pattern readwrite
// devices/%u/#): as the run's user every publish is refused; as each group's own user
// nothing is refused and every message arrives, in two worker processes (the group passwords reach
// them through their environment) and in one process with the passwords the marker in
// the file, given outside the Spec (a command line's --set) and in
// $MQBLAST_GROUP_PASSWORDS. No password reaches the result; the groups' usernames do.
func TestGroupCredentials(t *testing.T) {
	t.Parallel()
	m := testbroker.StartMosquitto(t, testbroker.Options{
		Users: map[string]string{"ops": "pw-ops", "alice": "pw-alice", "bob": "pw-bob"},
		Extra: []string{aclFile(t, "pattern readwrite devices/%u/#")}})
	host, port, _ := net.SplitHostPort(m.Addr)
	check := func(name string, r ran, res *result.Result) {
		t.Helper()
		if r.err != nil || res == nil {
			t.Fatalf("%s: %v\n%s", name, r.err, r.stderr)
		}
		msg, c := res.Messages, res.Connections
		t.Logf("%s: established %d refused %v; published %d refused %v, subscriptions refused %v; expected %d received %d lost %d",
			name, c.Established, c.Refused, msg.Published, msg.Refused, msg.SubscribeRefused, msg.Expected, msg.Received, msg.Lost)
		if c.Established != 5 || len(c.Refused) != 0 || msg.RefusedTotal != 0 || len(msg.SubscribeRefused) != 0 || msg.SubscribeFailed != 0 ||
			msg.Published < 60 || msg.Received != msg.Expected || msg.Lost != 0 {
			t.Errorf("%s: want 5 clients connected as their groups' users, nothing refused, every message received", name)
		}
		doc, _ := json.Marshal(res)
		for _, pw := range []string{"pw-alice", "pw-bob", "pw-ops"} {
			if bytes.Contains(doc, []byte(pw)) || strings.Contains(r.stdout, pw) || strings.Contains(r.stderr, pw) {
				t.Errorf("%s: the result or the run's output holds the password %q", name, pw)
			}
		}
		var eff struct {
			Groups []struct {
				Name   string            `json:"name"`
				Server map[string]string `json:"server"`
			} `json:"groups"`
		}
		_ = json.Unmarshal(res.Scenario, &eff)
		for _, g := range eff.Groups {
			if g.Server["username"] != g.Name || g.Server["password"] != secret.Marker {
				t.Errorf("%s: the result's scenario has group %s's server %v: want its username and the password %q", name, g.Name, g.Server, secret.Marker)
			}
		}
	}

	// The control: as ops, every client's publishes are refused (the ACL bites), as they
	// were when a group's own credentials were ignored.
	ops := strings.NewReplacer(",\n     \"server\": {\"username\": \"alice\", \"password\": \"pw-alice\"}", "",
		`, "username": "bob", "password": "pw-bob"`, "").Replace(fmt.Sprintf(perUserFile, "pw-alice", host, port, "pw-bob"))
	if strings.Contains(ops, "pw-alice") || strings.Contains(ops, "pw-bob") {
		t.Fatalf("the control keeps a group's credentials:\n%s", ops)
	}
	r := doSpec(t, &Spec{Scenario: spec.Scenario{Name: "as-ops.json", File: json.RawMessage(ops)}, Brokers: []string{m.Addr},
		Procs: 1, NoCheck: true, Outputs: spec.Outputs{Format: "json"}})
	if res := r.res; res == nil || res.Messages.Published == 0 || res.Messages.Refused["not_authorized"] != res.Messages.Published {
		t.Fatalf("as ops: want every publish refused not_authorized: %v\n%s", r.err, r.stderr)
	}
	t.Logf("as ops: published %d, refused %v, received %d", r.res.Messages.Published, r.res.Messages.Refused, r.res.Messages.Received)

	file := fmt.Sprintf(perUserFile, "pw-alice", host, port, "pw-bob")
	r = doSpec(t, &Spec{Scenario: spec.Scenario{Name: "per-user.json", File: json.RawMessage(file)}, Brokers: []string{m.Addr},
		Procs: 2, NoCheck: true, Outputs: spec.Outputs{Format: "json"}})
	check("procs 2", r, checkDoc(t, r))

	file = fmt.Sprintf(perUserFile, secret.Marker, host, port, secret.Marker)
	var out, errOut bytes.Buffer
	o := IO{Stdout: &out, Stderr: &errOut, Exe: testbroker.Binary(t, "../cmd/mqblast"), Version: "test",
		GroupPasswords: map[string]string{"alice": "pw-alice"},
		Getenv: func(k string) string {
			if k == secret.GroupPasswordsEnv {
				return `{"bob": "pw-bob"}`
			}
			return ""
		}}
	sp := &Spec{Scenario: spec.Scenario{Name: "per-user.json", File: json.RawMessage(file)}, Brokers: []string{m.Addr},
		Procs: 1, NoCheck: true, Outputs: spec.Outputs{Format: "json"}}
	res, err := Do(context.Background(), sp, o)
	r = ran{res: res, stdout: out.String(), stderr: errOut.String(), err: err}
	check("markers", r, checkDoc(t, r))

	// Without bob's: refused before any socket, with the field's path and no password.
	out.Reset()
	errOut.Reset()
	o.Getenv = func(string) string { return "" }
	_, err = Do(context.Background(), sp, o)
	if err == nil || !strings.Contains(err.Error(), "groups[1].server.password") || !strings.Contains(err.Error(), secret.GroupPasswordsEnv) ||
		strings.Contains(err.Error(), "pw-") {
		t.Errorf("bob's password not given: %v", err)
	}
}

// deviceFleetFile is a Round-Trip fleet of 2,000 MQTT 5 devices, each publishing at QoS 1 to
// its own user's topic and receiving it back (point to point): client dev-K must log in as
// user-K, whom the broker's ACL lets use devices/user-K/# only. The logins come from the
// credentials file, matched by client id.
const deviceFleetFile = `{
  "name": "device-fleet",
  "type": "Round-Trip",
  "client_id": "dev-$clientindex",
  "publishers": {"protocol_version": 5, "client_count": 2000, "qos": 1, "topics": "devices/user-$clientindex/telemetry"},
  "parameters": {"connection_rate": 2000, "duration_sec": 3, "warmup_sec": 0.5, "drain_sec": 1, "publish_rate": 1}
}`

// TestPerClientCredentials: Mosquitto with a password file of 2,000 users and the ACL
// pattern readwrite devices/%u/#; 2,000 clients log in each as its own user from a
// credentials file (rows shuffled, matched by client id), in two worker processes that read
// the file themselves: none refused, none lost, every copy received. With one row's
// password wrong, exactly that client is refused, by reason, and the merged result's error
// names it. No password of the file reaches the result or the run's output; the result's
// scenario names the file.
func TestPerClientCredentials(t *testing.T) {
	t.Parallel()
	const n = 2000
	users := make(map[string]string, n)
	rows := make([]string, n)
	for k := range n {
		users[fmt.Sprintf("user-%d", k)] = fmt.Sprintf("s3cr3t-%d", k)
		rows[k] = fmt.Sprintf("dev-%d,user-%d,s3cr3t-%d", k, k, k)
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(n, func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	m := testbroker.StartMosquitto(t, testbroker.Options{Users: users, Extra: []string{aclFile(t, "pattern readwrite devices/%u/#")}})
	dir := t.TempDir()
	write := func(name string, rows []string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("client_id,username,password\n"+strings.Join(rows, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	run := func(name, creds string, procs int) (ran, *result.Result) {
		t.Helper()
		r := doSpec(t, &Spec{Scenario: spec.Scenario{Name: "device-fleet.json", File: json.RawMessage(deviceFleetFile)},
			Brokers: []string{m.Addr}, Credentials: creds, Procs: spec.Procs(procs), NoCheck: true, Outputs: spec.Outputs{Format: "json"}})
		if r.res == nil {
			t.Fatalf("%s: no result: %v\n%s", name, r.err, r.stderr)
		}
		res := checkDoc(t, r)
		c, msg := res.Connections, res.Messages
		t.Logf("%s: established %d refused %v failed %d; published %d refused %v; expected %d received %d lost %d; errors %v",
			name, c.Established, c.Refused, c.Failed, msg.Published, msg.Refused, msg.Expected, msg.Received, msg.Lost, res.Errors)
		doc, _ := json.Marshal(res)
		if bytes.Contains(doc, []byte("s3cr3t")) || strings.Contains(r.stdout, "s3cr3t") || strings.Contains(r.stderr, "s3cr3t") {
			t.Errorf("%s: the result or the run's output holds a password of the file", name)
		}
		var eff struct {
			Credentials string `json:"credentials_file"`
		}
		_ = json.Unmarshal(res.Scenario, &eff)
		if eff.Credentials != creds {
			t.Errorf("%s: the result's scenario has credentials_file %q, want %q", name, eff.Credentials, creds)
		}
		return r, res
	}

	_, res := run("every login right", write("devices.csv", rows), 2)
	c, msg := res.Connections, res.Messages
	if c.Established != n || c.Failed != 0 || msg.RefusedTotal != 0 || msg.SubscribeFailed != 0 ||
		msg.Published < 2*n || msg.Received != msg.Expected || msg.Lost != 0 {
		t.Errorf("every login right: want %d clients connected as their own users, nothing refused, every message received", n)
	}

	bad := append([]string(nil), rows...)
	const wrong = "dev-1234"
	for i, r := range bad {
		if strings.HasPrefix(r, wrong+",") {
			bad[i] = wrong + ",user-1234,s3cr3t-wrong"
		}
	}
	r, res := run("one password wrong", write("one-wrong.csv", bad), 2)
	c, msg = res.Connections, res.Messages
	const reason = "not_authorized" // Mosquitto 2.0 answers a wrong password so (0x87)
	if c.Established != n-1 || c.Failed != 1 || c.Refused[reason] != 1 || len(c.Refused) != 1 ||
		msg.Lost != 0 || msg.Received != msg.Expected || msg.RefusedTotal != 0 {
		t.Errorf("one password wrong: want exactly one client refused %s, the others' messages all received", reason)
	}
	named := false
	for _, e := range res.Errors {
		named = named || (e.Kind == "refused:"+reason && e.Count == 1 && strings.HasPrefix(e.Example, "client "+wrong+": "))
	}
	if !named {
		t.Errorf("one password wrong: no error refused:%s naming client %s: %v", reason, wrong, res.Errors)
	}
	t.Logf("one password wrong: the run's error: %v", r.err)
}

// idsAnywhereFile is a Round-Trip fleet of MQTT 5 devices whose client ids hold the index
// inside (%q: the client_id template), each publishing at QoS 1 to its own id's topic.
const idsAnywhereFile = `{
  "name": "ids-anywhere",
  "type": "Round-Trip",
  "client_id": %q,
  "publishers": {"protocol_version": 5, "client_count": %d, "qos": 1, "topics": "devices/$clientid/telemetry"},
  "parameters": {"connection_rate": 1000, "duration_sec": 2, "warmup_sec": 0.5, "drain_sec": 1, "publish_rate": 2}
}`

// TestClientIDTemplateAtBroker: client ids with text after the index ("dev-$clientindex-eu")
// and zero-padded ("d$clientindex:4-eu") against Mosquitto with a password file and an ACL
// keyed on the client id (pattern readwrite devices/%c/#), the logins from a credentials
// file matched by those ids, in one and two processes: the broker's log shows every client
// connected as its id with its own user, and nothing is refused or lost (a topic's
// $clientid that differed from the id dialled with would be refused by the ACL).
func TestClientIDTemplateAtBroker(t *testing.T) {
	t.Parallel()
	const n = 300
	users := make(map[string]string, n)
	for k := range n {
		users[fmt.Sprintf("user-%d", k)] = fmt.Sprintf("s3cr3t-%d", k)
	}
	m := testbroker.StartMosquitto(t, testbroker.Options{Users: users,
		Extra: []string{aclFile(t, "pattern readwrite devices/%c/#"), "log_type notice", "connection_messages true"}})
	connected := regexp.MustCompile(`New client connected from \S+ as (\S+) \(p5, [^)]*u'([^']*)'\)`)
	for _, c := range []struct {
		tmpl  string
		procs int
		id    func(k int) string
	}{
		{"dev-$clientindex-eu", 1, func(k int) string { return fmt.Sprintf("dev-%d-eu", k) }},
		{"dev-$clientindex-eu", 2, func(k int) string { return fmt.Sprintf("dev-%d-eu", k) }},
		{"d$clientindex:4-eu", 2, func(k int) string { return fmt.Sprintf("d%04d-eu", k) }},
	} {
		name := fmt.Sprintf("%s, %d processes", c.tmpl, c.procs)
		rows := make([]string, n)
		want := make(map[string]string, n)
		for k := range n {
			rows[k] = fmt.Sprintf("%s,user-%d,s3cr3t-%d", c.id(k), k, k)
			want[c.id(k)] = fmt.Sprintf("user-%d", k)
		}
		creds := filepath.Join(t.TempDir(), "devices.csv")
		if err := os.WriteFile(creds, []byte("client_id,username,password\n"+strings.Join(rows, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		before, _ := os.ReadFile(m.Log)
		r := doSpec(t, &Spec{Scenario: spec.Scenario{Name: "ids-anywhere.json", File: json.RawMessage(fmt.Sprintf(idsAnywhereFile, c.tmpl, n))},
			Brokers: []string{m.Addr}, Credentials: creds, Procs: spec.Procs(c.procs), NoCheck: true, Outputs: spec.Outputs{Format: "json"}})
		if r.res == nil {
			t.Fatalf("%s: no result: %v\n%s", name, r.err, r.stderr)
		}
		res := checkDoc(t, r)
		conn, msg := res.Connections, res.Messages
		after, _ := os.ReadFile(m.Log)
		seen := map[string]string{}
		for _, l := range connected.FindAllStringSubmatch(string(after[len(before):]), -1) {
			seen[l[1]] = l[2]
		}
		wrong := 0
		for id, user := range want {
			if seen[id] != user {
				if wrong++; wrong <= 3 {
					t.Errorf("%s: the broker saw %q log in as %q, want %q", name, id, seen[id], user)
				}
			}
		}
		t.Logf("%s: the broker's log: %d clients connected, %d as their own id and user (e.g. %s as %s); established %d refused %v; published %d refused %v; expected %d received %d lost %d",
			name, len(seen), n-wrong, c.id(n-1), seen[c.id(n-1)], conn.Established, conn.Refused, msg.Published, msg.Refused, msg.Expected, msg.Received, msg.Lost)
		if len(seen) != n || wrong != 0 || conn.Established != n || len(conn.Refused) != 0 || msg.RefusedTotal != 0 ||
			len(msg.SubscribeRefused) != 0 || msg.Published < n || msg.Received != msg.Expected || msg.Lost != 0 {
			t.Errorf("%s: want %d clients connected as their ids, nothing refused, nothing lost", name, n)
		}
	}
}
