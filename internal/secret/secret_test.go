package secret

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestRedactJSON(t *testing.T) {
	t.Parallel()
	check := func(in, want string) {
		t.Helper()
		got := string(RedactJSON([]byte(in), "password"))
		if got != want {
			t.Errorf("RedactJSON(%s)\n got %s\nwant %s", in, got, want)
		}
	}
	check(`{"name":"x","server":{"hostname":"h","password":"hunter2","port":1}}`,
		`{"name":"x","server":{"hostname":"h","password":"<redacted>","port":1}}`)
	// Indented, escaped, twice in one object (the last one counts for a decoder), at
	// other depths and in arrays, not a string.
	check("{\n  \"server\": {\n    \"password\" :  \"a\\\"b\\u0041\",\n    \"password\": \"c\"\n  },\n  \"x\": [{\"password\": 5}, {\"y\": {\"password\": {\"k\": \"v\"}}}]\n}",
		"{\n  \"server\": {\n    \"password\" :  \"<redacted>\",\n    \"password\": \"<redacted>\"\n  },\n  \"x\": [{\"password\": \"<redacted>\"}, {\"y\": {\"password\": \"<redacted>\"}}]\n}")
	// Nothing to hide: the same bytes.
	for _, in := range []string{`{"server":{"password":""}}`, `{"server":{"password":"<redacted>"}}`,
		`{"server":{"password":null}}`, `{"server":{"username":"u"}}`, `[1,"password"]`, `not json`, ``, `{"password":`} {
		check(in, in)
	}
	// A value that is a key elsewhere is not a key.
	check(`{"a":"password","password":"p"}`, `{"a":"password","password":"<redacted>"}`)
	out := RedactJSON([]byte(`{"server":{"password":"p"}}`), "password")
	if !json.Valid(out) || strings.Contains(string(out), `"p"`) {
		t.Errorf("%s", out)
	}
}

func TestRedactURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"mqtt://u:pw@h:1883":        "mqtt://u:<redacted>@h:1883",
		"wss://u:p@ss@h:8084/mqtt":  "wss://u:<redacted>@h:8084/mqtt",
		"mqtt://u@h:1883":           "mqtt://u@h:1883",
		"ws://h:8083/mqtt?x=a:b@c":  "ws://h:8083/mqtt?x=a:b@c",
		"127.0.0.1:1883":            "127.0.0.1:1883",
		"mqtts://user:secret@[::1]": "mqtts://user:<redacted>@[::1]",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestEnv(t *testing.T) {
	t.Parallel()
	env := []string{"A=1", PasswordEnv + "=old", "B=2"}
	if got := Env(env, "new"); !slices.Equal(got, []string{"A=1", "B=2", PasswordEnv + "=new"}) {
		t.Errorf("set: %q", got)
	}
	if got := Env(env, ""); !slices.Equal(got, []string{"A=1", "B=2"}) {
		t.Errorf("removed: %q", got)
	}
	if env[1] != PasswordEnv+"=old" {
		t.Error("Env changed its argument")
	}
}

func TestGroupPasswordsEnv(t *testing.T) {
	t.Parallel()
	env := EnvGroups([]string{"A=1", GroupPasswordsEnv + "=old"}, map[string]string{"devices": `p"w`, "backend": "x"})
	if len(env) != 2 || env[0] != "A=1" || !strings.HasPrefix(env[1], GroupPasswordsEnv+"=") {
		t.Fatalf("EnvGroups: %q", env)
	}
	got, err := GroupPasswords(strings.TrimPrefix(env[1], GroupPasswordsEnv+"="))
	if err != nil || len(got) != 2 || got["devices"] != `p"w` || got["backend"] != "x" {
		t.Errorf("GroupPasswords: %v %v", got, err)
	}
	if env := EnvGroups([]string{GroupPasswordsEnv + "=old", "B=2"}, nil); !slices.Equal(env, []string{"B=2"}) {
		t.Errorf("EnvGroups without groups: %q", env)
	}
	if got, err := GroupPasswords(" "); got != nil || err != nil {
		t.Errorf("empty: %v %v", got, err)
	}
	for _, bad := range []string{`{"devices": 5}`, `s3cret`, `["s3cret"]`, `null`} {
		if _, err := GroupPasswords(bad); err == nil || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("GroupPasswords(%s): %v", bad, err)
		}
	}
}
