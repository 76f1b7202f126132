package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/reactor"
	"github.com/mqblast/mqblast/scenario"
)

// payloadJSON: three publishers at QoS 1 with a payload literal, each received by its own
// subscriber of the run.
const payloadJSON = `{
  "type": "Point-To-Point",
  "publishers":  {"client_count": 3, "qos": 1, "topics": "pl/$clientindex"},
  "subscribers": {"client_count": 3, "qos": 1, "topics": "pl/$clientindex"},
  "parameters":  {"publish_rate": 20, "duration_sec": 1.5, "warmup_sec": 0.5, "drain_sec": 1, "payload": "temp=21.5;unit=C"}
}`

// TestPayloadText: the payload literal is in every message as a subscriber outside the
// run (paho.golang on Mosquitto) sees it: after the 16-byte header and the 8-byte write
// time, from byte scenario.PayloadTextAt on, the payload exactly that long; the run's own
// subscribers still measure every message, from the due time and from the write.
func TestPayloadText(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against Mosquitto")
	}
	if scenario.PayloadTextAt != reactor.MeasuredSize {
		t.Fatalf("scenario.PayloadTextAt %d, reactor.MeasuredSize %d: the plan sizes the text where the engine does not write it",
			scenario.PayloadTextAt, reactor.MeasuredSize)
	}
	const text = "temp=21.5;unit=C"
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	outside := pahoCollector(t, m.Addr, "pl/#")
	s, err := scenario.Parse("payload.json", []byte(payloadJSON))
	if err == nil {
		err = s.Validate()
	}
	if err != nil {
		t.Fatal(err)
	}
	if want := scenario.PayloadTextAt + len(text); s.Parameters.PayloadSize != want {
		t.Errorf("payload_size %d, want %d (the measurement bytes and the text)", s.Parameters.PayloadSize, want)
	}
	started := time.Now()
	res := runPlanned(t, m.Addr, s, nil)
	msg := res.Messages
	if msg.Published < 60 || msg.Received != msg.Expected || msg.Lost != 0 || res.LatencyUS.Count == 0 || res.LatencyRaw.Count == 0 {
		t.Fatalf("published %d expected %d received %d lost %d, latency %d raw %d: want every message received and measured",
			msg.Published, msg.Expected, msg.Received, msg.Lost, res.LatencyUS.Count, res.LatencyRaw.Count)
	}
	var got [][]byte
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if got = outside(); int64(len(got)) >= msg.Published || time.Now().After(deadline) {
			break
		}
	}
	if int64(len(got)) != msg.Published {
		t.Errorf("the outside subscriber got %d payloads, the run published %d", len(got), msg.Published)
	}
	bad := 0
	for _, pl := range got {
		_, _, _, ok := reactor.ReadHeader(pl)
		var sent time.Time
		if len(pl) >= reactor.MeasuredSize {
			sent = time.Unix(0, int64(binary.BigEndian.Uint64(pl[reactor.HeaderSize:reactor.MeasuredSize])))
		}
		if !ok || len(pl) != scenario.PayloadTextAt+len(text) ||
			!bytes.Equal(pl[scenario.PayloadTextAt:], []byte(text)) || sent.Before(started) || sent.After(time.Now()) {
			if bad++; bad <= 3 {
				t.Errorf("payload of %d bytes %q (header %v, write time %v): want the header, the write time and %q from byte %d",
					len(pl), pl, ok, sent, text, scenario.PayloadTextAt)
			}
		}
	}
	t.Logf("published %d; the outside subscriber got %d payloads, %d without the text at byte %d", msg.Published, len(got), bad, scenario.PayloadTextAt)
	if bad > 0 {
		t.Errorf("%d of %d payloads without the text at byte %d", bad, len(got), scenario.PayloadTextAt)
	}
}

// pahoCollector connects a paho.golang client to addr, subscribed to filter at QoS 1 with
// a clean session; the function it returns gives a copy of every payload received so far.
func pahoCollector(t *testing.T, addr, filter string) func() [][]byte {
	t.Helper()
	var mu sync.Mutex
	var got [][]byte
	pahoSubscribed(t, addr, "ext-collector", filter, func(p *paho.Publish) {
		mu.Lock()
		got = append(got, bytes.Clone(p.Payload))
		mu.Unlock()
	})
	return func() [][]byte {
		mu.Lock()
		defer mu.Unlock()
		return append([][]byte(nil), got...)
	}
}

// pahoSubscribed connects a paho.golang client of id to addr with a clean session,
// subscribed to filter at QoS 1, that hands each PUBLISH to on (on the client's reading
// goroutine); it disconnects when the test ends.
func pahoSubscribed(t *testing.T, addr, id, filter string, on func(*paho.Publish)) *paho.Client {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c := paho.NewClient(paho.ClientConfig{Conn: nc, ClientID: id,
		OnPublishReceived: []func(paho.PublishReceived) (bool, error){func(pr paho.PublishReceived) (bool, error) {
			on(pr.Packet)
			return true, nil
		}}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.Connect(ctx, &paho.Connect{ClientID: id, CleanStart: true, KeepAlive: 30}); err != nil {
		t.Fatalf("paho connect: %v", err)
	}
	if _, err := c.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: filter, QoS: 1}}}); err != nil {
		t.Fatalf("paho subscribe: %v", err)
	}
	t.Cleanup(func() { _ = c.Disconnect(&paho.Disconnect{}) })
	return c
}
