package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/mqblast/mqblast/internal/testbroker"
)

// TestQuickVerbsMaxPacketSize: a message over the client's inbound limit (a retained 2 MiB
// one) drops a sub client with a line that says to raise the limit with --max-packet-size,
// and sub takes that flag: with --max-packet-size 4MiB the message arrives.
func TestQuickVerbsMaxPacketSize(t *testing.T) {
	t.Parallel() // its own broker and runs: it waits on them, beside the other such tests
	pub, err := exec.LookPath("mosquitto_pub")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("mosquitto_pub is not installed (apt-get install -y mosquitto-clients)")
		}
		t.Skip("no mosquitto_pub (apt-get install -y mosquitto-clients)")
	}
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	host, port, _ := strings.Cut(m.Addr, ":")
	c := exec.Command(pub, "-h", host, "-p", port, "-r", "-t", "big", "-s")
	c.Stdin = bytes.NewReader(bytes.Repeat([]byte("x"), 2<<20))
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("mosquitto_pub: %v: %s", err, out)
	}
	args := []string{"sub", "-H", host, "-p", port, "-t", "big", "-c", "1", "--duration", "1s", "--no-check", "--format", "json"}

	res := decodeResult(t, runBin(t, args...))
	hint := ""
	for _, e := range res.Errors {
		if e.Kind == "dropped:client_packet_limit" {
			hint = e.Example
		}
	}
	if res.Connections.DroppedBy["client_packet_limit"] != 1 || !strings.Contains(hint, "raise it with --max-packet-size") {
		t.Fatalf("dropped %v, errors %+v: want one client_packet_limit naming --max-packet-size", res.Connections.DroppedBy, res.Errors)
	}

	r := runBin(t, append(args, "--max-packet-size", "4MiB")...)
	res = decodeResult(t, r)
	if res.Connections.Dropped != 0 || res.Messages.Unmeasured != 1 {
		t.Errorf("with --max-packet-size 4MiB: dropped %v, unmeasured %d (want the one message); stderr %s",
			res.Connections.DroppedBy, res.Messages.Unmeasured, r.stderr)
	}
}
