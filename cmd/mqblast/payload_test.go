package main

import (
	"net"
	"strings"
	"testing"
	"time"
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
