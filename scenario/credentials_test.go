package scenario

import (
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
		{"server", false}, {"nosuch.field", false}, {"", false}} {
		if got := SecretPath(tc.path); got != tc.want {
			t.Errorf("SecretPath(%q) = %v", tc.path, got)
		}
	}
}
