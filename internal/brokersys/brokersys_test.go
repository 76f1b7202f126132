package brokersys

import (
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mqblast/mqblast/codec"
	"github.com/mqblast/mqblast/internal/testbroker"
)

func TestParse(t *testing.T) {
	t.Parallel()
	check := func(in string, want float64, ok bool) {
		t.Helper()
		got, gok := Parse([]byte(in))
		if got != want || gok != ok {
			t.Errorf("Parse(%q) = %v, %v; want %v, %v", in, got, gok, want, ok)
		}
	}
	check("123456", 123456, true)
	check("0.50", 0.5, true)
	check("42 seconds", 42, true)
	check("mosquitto version 2.0.11", 0, false)
	check("", 0, false)
}

// TestReaderMosquitto: the reader logs in to Mosquitto (sys_interval 1), has the retained
// $SYS values when Start returns, follows the broker's refreshes, and counts what a client
// publishes in the broker's publish counters.
func TestReaderMosquitto(t *testing.T) {
	m := testbroker.StartMosquitto(t, testbroker.Options{Extra: []string{"sys_interval 1"},
		Users: map[string]string{"bench": "s3cret"}})
	ctx := t.Context()
	rd, err := Start(ctx, Options{Addr: m.Addr, Username: "bench", Password: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	r0 := rd.Snapshot()
	if !strings.HasPrefix(r0.Version, "mosquitto version 2.") || r0.Read == 0 || !r0.Connected {
		t.Fatalf("first reading: version %q, read %d, connected %v", r0.Version, r0.Read, r0.Connected)
	}
	if _, ok := r0.Num(TopicUptime); !ok {
		t.Errorf("no uptime in %v", r0.Topics)
	}
	rx0, _ := r0.Num(TopicPublishRecv)
	publish(t, m.Addr, 7)
	r1 := rd.WaitRefresh(time.Now(), 3*time.Second)
	rx1, ok := r1.Num(TopicPublishRecv)
	if !ok || rx1-rx0 != 7 {
		t.Errorf("publish received %v → %v (%v), want +7", rx0, rx1, ok)
	}
	// Mosquitto 2.0.11 at sys_interval 1 refreshes on its whole-second clock, once more than
	// a second has passed: 1.45-1.86 s apart here idle, 2.06 s in a CI run's parallel pass.
	if r1.Refresh < 500*time.Millisecond || r1.Refresh > 3*time.Second {
		t.Errorf("refresh %v, want the broker's 1-2 s", r1.Refresh)
	}
	if c, _ := r1.Num(TopicClientsConnect); c < 1 {
		t.Errorf("clients connected %v: the reader itself is one", c)
	}
}

// TestReaderRefused: a broker that refuses the login, and an address nobody listens on,
// are errors that do not show the password.
func TestReaderRefused(t *testing.T) {
	m := testbroker.StartMosquitto(t, testbroker.Options{Users: map[string]string{"bench": "s3cret"}})
	_, err := Start(t.Context(), Options{Addr: m.Addr, Username: "bench", Password: "wrong-pw", Timeout: 2 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "refused") || strings.Contains(err.Error(), "wrong-pw") {
		t.Errorf("refused login: %v", err)
	}
	port := testbroker.FreePort(t, "127.0.0.1")
	_, err = Start(t.Context(), Options{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Timeout: time.Second})
	if err == nil || !strings.Contains(err.Error(), "cannot reach") {
		t.Errorf("nothing listening: %v", err)
	}
}

// TestReaderReconnects: when the broker drops the reader, it reconnects and counts a gap.
func TestReaderReconnects(t *testing.T) {
	m := testbroker.StartMosquitto(t, testbroker.Options{Extra: []string{"sys_interval 1"}})
	rd, err := Start(t.Context(), Options{Addr: m.Addr, ClientID: "sys-twin"})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	// A second client with the same id takes the session over: Mosquitto drops the reader.
	c, err := net.Dial("tcp", m.Addr)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = c.Write(codec.AppendConnect(nil, &codec.Connect{ClientID: []byte("sys-twin"), CleanStart: true, KeepAlive: 30}, codec.V311))
	time.Sleep(200 * time.Millisecond)
	_ = c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		r := rd.Snapshot()
		if r.Gaps >= 1 && r.Connected {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("gaps %d connected %v err %q", r.Gaps, r.Connected, r.Err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	r := rd.WaitRefresh(time.Now(), 3*time.Second)
	if _, ok := r.Num(TopicUptime); !ok || !r.Topics[TopicUptime].At.After(deadline.Add(-5*time.Second)) {
		t.Errorf("no uptime after the reconnect")
	}
}

// publish connects a client that publishes n QoS 0 messages and disconnects.
func publish(t *testing.T, addr string, n int) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close() //nolint:errcheck
	out := codec.AppendConnect(nil, &codec.Connect{ClientID: []byte("pub"), CleanStart: true, KeepAlive: 30,
		HasUsername: true, Username: []byte("bench"), HasPassword: true, Password: []byte("s3cret")}, codec.V311)
	for range n {
		out = codec.AppendPublish(out, &codec.Publish{Topic: []byte("t/x"), Payload: []byte("hi")}, codec.V311)
	}
	out = codec.AppendDisconnect(out, &codec.Disconnect{}, codec.V311)
	if _, err := c.Write(out); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, 64)
	for { // until the broker closes after DISCONNECT
		if _, err := c.Read(buf); err != nil {
			return
		}
	}
}
