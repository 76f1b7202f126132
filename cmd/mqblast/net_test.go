package main

import (
	"strings"
	"testing"
)

func TestNetHelp(t *testing.T) {
	for _, args := range [][]string{{"net", "--help"}, {"net", "emulate", "--help"}, {"net", "apply", "--help"}, {"net", "show", "--help"}} {
		out, _, code := runMQ(t, args...)
		if code != exitOK || !strings.Contains(out, "delay=DURATION") || !strings.Contains(out, "Example") {
			t.Errorf("%v (exit %d) lacks the profile syntax or an example:\n%s", args, code, out)
		}
	}
	if out, _, _ := runMQ(t, "run", "--help"); !strings.Contains(out, "--net string") || !strings.Contains(out, "--net-broker-cmd") {
		t.Errorf("run --help lacks --net:\n%s", out)
	}
}

func TestNetShow(t *testing.T) {
	out, _, code := runMQ(t, "net", "show")
	if code != exitOK {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, want := range []string{
		"optimal  delay=1.25ms,jitter=250us,loss=0.02%   delay=1.25ms,jitter=250us,loss=0.02%",
		"worst    delay=3.125ms,jitter=625us,loss=0.05%",
		"cloud    delay=12.5ms ",
		"netem: ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("net show lacks %q:\n%s", want, out)
		}
	}
	out, _, _ = runMQ(t, "net", "show", "worst,up:loss=1%")
	if !strings.Contains(out, "delay=3.125ms,jitter=625us,up:loss=1%,down:loss=0.05%  delay=3.125ms,jitter=625us,loss=1%  delay=3.125ms,jitter=625us,loss=0.05%") {
		t.Errorf("net show PROFILE:\n%s", out)
	}
}

func TestNetApplyDryRun(t *testing.T) {
	out, _, code := runMQ(t, "net", "apply", "typical", "--to", "192.0.2.10:1883", "--dev", "eth0", "--dry-run")
	if code != exitOK {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, want := range []string{
		"would apply typical toward 192.0.2.10 on eth0:",
		"tc qdisc add dev eth0 parent 1:4 handle 40: netem limit 100000 delay 2080us 420us loss random 0.03%",
		"u32 match ip src 192.0.2.10/32 action mirred egress redirect dev mqb-eth0",
		"and clear it with:\n  tc qdisc del dev eth0 root",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run lacks %q:\n%s", want, out)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"net", "apply", "fast", "--to", "192.0.2.10", "--dry-run"}, `unknown profile "fast"`},
		{[]string{"net", "apply", "worst", "--dry-run"}, "--to ADDR is required"},
		{[]string{"net", "apply", "worst", "--to", "broker.example", "--dry-run"}, "want the broker's IP address"},
		{[]string{"net", "apply", "--dry-run"}, "takes one PROFILE"},
		{[]string{"net", "emulate"}, "takes a PROFILE"},
		{[]string{"net", "emulate", "loss=1"}, `loss "1" has no %`},
		{[]string{"run", "quick-conn-100", "--net", "slow"}, `--net: network profile "slow": unknown profile`},
	} {
		_, stderr, code := runMQ(t, c.args...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want exit 2 and %q", c.args, code, stderr, c.want)
		}
	}
}
