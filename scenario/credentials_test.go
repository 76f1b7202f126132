package scenario

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestCheckCredentials: a password without a username is refused when a group speaks MQTT
// 3.1.1 or 3.1 ([MQTT-3.1.2-22]), with the fix; MQTT 5, or a username, takes it.
func TestCheckCredentials(t *testing.T) {
	t.Parallel()
	s, ok := Builtin("quick-p2p-100")
	if !ok {
		t.Fatal("no quick-p2p-100")
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	check := func(sets map[string]string, want string) {
		t.Helper()
		c := s.Clone()
		for k, v := range sets {
			if err := c.Set(k, v); err != nil {
				t.Fatal(err)
			}
		}
		for _, err := range []error{c.Validate(), c.CheckCredentials()} {
			switch {
			case want == "" && err != nil:
				t.Errorf("%v: %v", sets, err)
			case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
				t.Errorf("%v: %v, want %q", sets, err, want)
			case err != nil && strings.Contains(err.Error(), "hunter2"):
				t.Errorf("%v: the error shows the password: %v", sets, err)
			}
		}
	}
	check(map[string]string{"server.password": "hunter2"},
		"server.password: a password without server.username: the publishers are MQTT 3.1.1 clients, which send a password only with a username ([MQTT-3.1.2-22]")
	check(map[string]string{"server.password": "hunter2"}, "give server.username (--set server.username=NAME, -u NAME), or protocol_version 5 to every group, or no password")
	check(map[string]string{"server.password": "hunter2", "publishers.protocol_version": "5"}, "the subscribers are MQTT 3.1.1 clients")
	check(map[string]string{"server.password": "hunter2", "publishers.protocol_version": "5", "subscribers.protocol_version": "5"}, "")
	check(map[string]string{"server.password": "hunter2", "server.username": "u"}, "")
	check(map[string]string{"server.username": "u"}, "")
	check(nil, "")
}

func TestSecretPath(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		path string
		want bool
	}{{"server.password", true}, {" server.password ", true}, {"server.username", false}, {"publishers.qos", false},
		{"server", false}, {"nosuch.field", false}, {"", false}, {"groups.devices.server.password", true},
		{"groups.devices.server.username", false}, {"groups.devices.password", false}, {"groups.server.password", false}} {
		if got := SecretPath(tc.path); got != tc.want {
			t.Errorf("SecretPath(%q) = %v", tc.path, got)
		}
	}
}

// groupCredsFile: three groups on the run's broker (as ops): alice's with a username and
// password of its own (a server of credentials alone), bob's on a server of its own with
// its own user, carol's with neither (the run's).
const groupCredsFile = `{"groups": [
  {"name": "alice", "behaviours": "publish", "client_count": 2, "topics": "d/alice/$clientindex", "expect_delivery": false,
   "server": {"username": "alice", "password": "pw-alice"}},
  {"name": "bob", "behaviours": "hold", "client_count": 1, "server": {"hostname": "b.example", "port": 1884, "username": "bob", "password": "pw-bob"}},
  {"name": "carol", "behaviours": "hold", "client_count": 1}],
 "server": {"hostname": "run.example", "username": "ops", "password": "pw-ops"}}`

// TestGroupCredentials: a group's own username and password are its clients' (the others
// keep the run's); a server of credentials alone keeps the run's broker; the effective
// scenario has the groups' usernames and the marker for their passwords, and reads back
// to the same plan once the passwords are given again.
func TestGroupCredentials(t *testing.T) {
	t.Parallel()
	p := mustParsePlan(t, groupCredsFile)
	want := map[string][3]string{"alice": {"alice", "pw-alice", "run"}, "bob": {"bob", "pw-bob", "own"}, "carol": {"ops", "pw-ops", "run"}}
	for i := range p.Len() {
		c := p.Client(i)
		broker := "run"
		if c.OwnBroker >= 0 {
			broker = "own"
		}
		if w := want[c.GroupName]; c.Username != w[0] || c.Password != w[1] || broker != w[2] {
			t.Errorf("client %s: user %q password %q, %s broker; want %v", c.ID, c.Username, c.Password, broker, w)
		}
	}
	if own := p.OwnBrokers(); len(own) != 1 || own[0] != "b.example:1884" {
		t.Errorf("own brokers %v, want bob's alone", own)
	}
	doc, err := json.Marshal(p.Scenario())
	if err != nil {
		t.Fatal(err)
	}
	for _, pw := range []string{"pw-alice", "pw-bob", "pw-ops"} {
		if strings.Contains(string(doc), pw) {
			t.Errorf("the effective scenario holds %q: %s", pw, doc)
		}
	}
	for _, w := range []string{`"server":{"password":"<redacted>","username":"alice"}`,
		`"server":{"hostname":"b.example","password":"<redacted>","port":1884,"username":"bob"}`} {
		if !strings.Contains(string(doc), strings.ReplaceAll(strings.ReplaceAll(w, "<", `\u003c`), ">", `\u003e`)) {
			t.Errorf("the effective scenario lacks %s: %s", w, doc)
		}
	}
	back, err := Parse("back.json", doc)
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range [][2]string{{"groups.alice.server.password", "pw-alice"}, {"groups.bob.server.password", "pw-bob"}, {"server.password", "pw-ops"}} {
		if err := back.Set(kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	p2, err := NewPlan(back)
	if err != nil {
		t.Fatal(err)
	}
	for i := range p.Len() {
		a, b := p.Client(i), p2.Client(i)
		if a.Username != b.Username || a.Password != b.Password || a.OwnBroker != b.OwnBroker {
			t.Errorf("client %d: %+v read back as %+v", i, a, b)
		}
	}
}

// TestGroupServerRefused: a group's server field that would not take effect is refused
// with its path, and a 3.1.1 group's own password needs the group's username.
func TestGroupServerRefused(t *testing.T) {
	t.Parallel()
	check := func(group, want string) {
		t.Helper()
		js := `{"groups": [{"name": "pub", "behaviours": "publish", "client_count": 1, "topics": "x", "expect_delivery": false},
		  {"name": "g", "client_count": 1, ` + group + `}], "server": {"hostname": "h"}}`
		s, err := Parse("t.json", []byte(js))
		if err == nil {
			err = s.Validate()
		}
		if err == nil {
			err = s.CheckCredentials()
		}
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", group, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: %v\nwant %s", group, err, want)
		case err != nil && strings.Contains(err.Error(), "s3cret"):
			t.Errorf("%s: the error shows the password: %v", group, err)
		}
	}
	check(`"behaviours": "hold", "qos": 1`, `t.json: groups[1].qos: 1, but the group neither publishes nor subscribes`)
	check(`"behaviours": "hold", "server": {"hostname": "o", "path": "/mqtt"}`, `groups[1].server.path: "/mqtt": a group's own server is plain MQTT over TCP`)
	check(`"behaviours": "hold", "server": {"hostname": "o", "brokers": ["o1:1883"]}`, `groups[1].server.hostname: "o" given with server.brokers`)
	check(`"behaviours": "hold", "server": {"port": 1884, "brokers": ["o1:1883"]}`, `groups[1].server.port: 1884 given with server.brokers`)
	check(`"behaviours": "hold", "server": {"port": 1883, "username": "u"}`, `groups[1].server.port: 1883 given without server.hostname`)
	check(`"behaviours": "hold", "server": {}`, `groups[1].server.hostname: missing`)
	check(`"behaviours": "hold", "server": {"password": "s3cret"}`,
		`groups[1].server.password: a password without groups[1].server.username: the group's clients are MQTT 3.1.1 clients`)
	check(`"behaviours": "hold", "protocol_version": 5, "server": {"password": "s3cret"}`, "")
	check(`"behaviours": "hold", "server": {"username": "u", "password": "s3cret"}`, "")
	check(`"behaviours": "hold", "server": {"brokers": ["o1:1883", "o2:1883"], "username": "u"}`, "")
	check(`"behaviours": "subscribe", "filters": "x", "qos": 1`, "")
}
