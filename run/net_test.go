package run

import (
	"slices"
	"testing"
	"time"
)

func TestWithoutNetFlags(t *testing.T) {
	got := withoutNetFlags([]string{"run", "x", "--net", "worst", "--duration", "5s", "--net-broker-cmd=mosquitto", "--net=local", "--net-broker-cmd", "a b", "--netx"})
	want := []string{"run", "x", "--duration", "5s", "--netx"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestWithoutPassword: the value of a --set of server.password, in either form, leaves the
// command line for the marker; the rest stays as it was.
func TestWithoutPassword(t *testing.T) {
	in := []string{"run", "x", "--set", "server.password=a=b", "--set=server.username=u", "--set= server.password =c",
		"--set", "parameters.duration_sec=5", "--set"}
	got, pw := WithoutPassword(in)
	want := []string{"run", "x", "--set", "server.password=<redacted>", "--set=server.username=u", "--set= server.password =<redacted>",
		"--set", "parameters.duration_sec=5", "--set"}
	if !slices.Equal(got, want) || pw != "c" {
		t.Errorf("got %q, %q; want %q, %q", got, pw, want, "c")
	}
	if in[3] != "server.password=a=b" {
		t.Error("WithoutPassword changed its argument")
	}
	if got, pw := WithoutPassword([]string{"run", "--set", "server.password=x"}); pw != "x" || got[2] != "server.password=<redacted>" {
		t.Errorf("got %q, %q", got, pw)
	}
}

// TestEmulatedProfile: a run in the emulator's client namespace records the profile it was
// given, canonical, with both directions; outside it records none.
func TestEmulatedProfile(t *testing.T) {
	env := map[string]string{}
	get := func(k string) string { return env[k] }
	if n := EmulatedProfile(get); n != nil {
		t.Errorf("no profile in the environment gave %+v", n)
	}
	env[netProfileEnv] = "worst"
	n := EmulatedProfile(get)
	if n == nil || n.Profile != "worst" || n.Via != "emulator" || n.Up.Delay != 3125*time.Microsecond || n.Down.Loss != 0.0005 {
		t.Errorf("worst: %+v", n)
	}
	env[netProfileEnv] = "up:delay=5ms"
	if n := EmulatedProfile(get); n == nil || n.Up.Delay != 5*time.Millisecond || !n.Down.IsZero() {
		t.Errorf("up:delay=5ms: %+v", n)
	}
}
