package sink_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/internal/tier"
	"github.com/mqblast/mqblast/sink"
)

// pahoWS is a Python paho-mqtt (1.6) subscriber and publisher over WebSocket: the
// subscriber takes topic at QoS 2, the publisher sends each payload (hex, one a line of
// argv[6]) at QoS argv[5] and waits for it to be acknowledged; the subscriber's payloads
// come out in hex, one a line.
const pahoWS = `
import sys, ssl, threading
import paho.mqtt.client as mqtt
host, port, path, ca, qos, payloads = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5]), sys.argv[6]
payloads = [bytes.fromhex(l.strip()) for l in open(payloads) if l.strip() or l == "\n"]
got, done, subbed = [], threading.Event(), threading.Event()
def client(name):
    c = mqtt.Client(client_id=name, transport="websockets")
    c.ws_set_options(path=path)
    if ca:
        c.tls_set(ca_certs=ca, cert_reqs=ssl.CERT_REQUIRED)
    return c
sub = client("paho-ws-sub")
def on_message(c, u, m):
    got.append(m.payload)
    if len(got) == len(payloads):
        done.set()
sub.on_message = on_message
sub.on_subscribe = lambda c, u, mid, q: subbed.set()
sub.connect(host, port)
sub.subscribe("paho/ws", qos)
sub.loop_start()
assert subbed.wait(10), "no SUBACK"
pub = client("paho-ws-pub")
pub.connect(host, port)
pub.loop_start()
for p in payloads:
    pub.publish("paho/ws", p, qos).wait_for_publish(10)
assert done.wait(20), "received %d of %d" % (len(got), len(payloads))
pub.disconnect(); sub.disconnect()
pub.loop_stop(); sub.loop_stop()
for p in got:
    print(p.hex())
`

// TestWSPaho: Python's paho-mqtt over ws and wss through the WebSocket sink at QoS 0, 1 and
// 2 (a second WebSocket and MQTT implementation): the subscriber receives the publisher's
// payloads byte for byte, empty to 200 KB (a payload over several of its frames' reads).
func TestWSPaho(t *testing.T) {
	tier.Integration(t)
	if err := exec.Command("/usr/bin/python3", "-c", "import paho.mqtt.client").Run(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("python3-paho-mqtt is not installed (apt-get install -y python3-paho-mqtt)")
		}
		t.Skip("no python3-paho-mqtt (apt-get install -y python3-paho-mqtt)")
	}
	certs := testbroker.NewCerts(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "paho_ws.py")
	if err := os.WriteFile(script, []byte(pahoWS), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, scheme := range []string{"ws", "wss"} {
		ca := ""
		var srv *sink.Server
		if scheme == "wss" {
			srv, ca = startWSSink(t, certs, sink.Config{WSPath: "/paho"}), certs.CA
		} else {
			srv = startWSSink(t, nil, sink.Config{WSPath: "/paho"})
		}
		host, port, _ := strings.Cut(srv.Addr(), ":")
		for q := range 3 {
			t.Run(fmt.Sprintf("%s/qos%d", scheme, q), func(t *testing.T) {
				payloads := [][]byte{[]byte("hello"), {}, make([]byte, 200<<10), {0, 1, 2, 255}, make([]byte, 126)}
				_, _ = rand.Read(payloads[2])
				_, _ = rand.Read(payloads[4])
				var lines, want bytes.Buffer
				for _, p := range payloads {
					fmt.Fprintln(&lines, hex.EncodeToString(p))
					fmt.Fprintln(&want, hex.EncodeToString(p))
				}
				file := filepath.Join(dir, fmt.Sprintf("%s-%d.hex", scheme, q))
				if err := os.WriteFile(file, lines.Bytes(), 0o600); err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				before := srv.Stats()
				cmd := exec.CommandContext(ctx, "/usr/bin/python3", script, host, port, "/paho", ca, fmt.Sprint(q), file)
				var out, serr bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &serr
				if err := cmd.Run(); err != nil {
					t.Fatalf("paho: %v\n%s", err, serr.String())
				}
				if out.String() != want.String() {
					t.Fatalf("paho's subscriber got %d bytes of hex, want %d: the payloads differ\n%s", out.Len(), want.Len(), serr.String())
				}
				st := await(srv, func(st sink.Stats) bool { return st.Connections == 0 })
				if st.PublishIn[q]-before.PublishIn[q] != uint64(len(payloads)) || st.Relayed[q]-before.Relayed[q] != uint64(len(payloads)) ||
					st.WS.Upgrades-before.WS.Upgrades != 2 || st.WS.ProtocolErrors != 0 || st.ProtocolErrors != 0 {
					t.Errorf("sink: publish in %v, relayed %v, ws %+v, protocol errors %d (before: %v, %v, %+v)", st.PublishIn, st.Relayed, st.WS, st.ProtocolErrors,
						before.PublishIn, before.Relayed, before.WS)
				}
			})
		}
	}
}
