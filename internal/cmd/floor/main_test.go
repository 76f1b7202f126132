package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mqblast/mqblast/internal/floor"
	"github.com/mqblast/mqblast/internal/testbroker"
)

// runFloor runs one command line of the floor and returns its output and exit code.
func runFloor(args ...string) (stdout, stderr string, code int) {
	var o, e bytes.Buffer
	code = run(context.Background(), args, &o, &e)
	return o.String(), e.String(), code
}

// TestFloorCommand: the floor refuses what it cannot run with a usage or scenario error,
// and runs a short messaging scenario against Mosquitto into one JSON document with the
// window's figures.
func TestFloorCommand(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"quick-p2p-100"}, exitUsage, "--broker"},
		{[]string{"quick-conn-100", "--broker", "127.0.0.1:1"}, exitInvalid, "no messages"},
		{[]string{}, exitUsage, "one scenario"},
	} {
		if _, stderr, code := runFloor(tc.args...); code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d (want %d), stderr %q (want %q in it)", tc.args, code, tc.code, stderr, tc.want)
		}
	}
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	out, stderr, code := runFloor("quick-p2p-100", "--broker", m.Addr, "--set", "publishers.client_count=2",
		"--set", "subscribers.client_count=2", "--set", "parameters.warmup_sec=0.5s", "--duration", "1.5s")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res floor.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	// 2 publishers at quick-p2p-100's 10 msg/s for 1.5 s: 30 messages, 20 in the 1 s window.
	if res.Schema != floor.Schema || res.Clients != 4 || res.Published < 28 || res.Received != res.Published ||
		res.ReceivedWindow < 16 || res.ReceivedWindow > 24 || res.LostConns != 0 {
		t.Fatalf("result %+v", res)
	}
}
