package scenario

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestNewQuick: the hosts of -H get the usual port of their transport unless -p is given,
// and the verb's checks name its flags.
func TestNewQuick(t *testing.T) {
	q := Quick{Verb: "conn", Type: "Connections", Group: "publishers", Count: 3, IntervalMS: 10, Keepalive: 60,
		Version: 5, Prefix: "c-", Duration: time.Second, Hosts: "a, [::1]", Port: 1883}
	for _, c := range []struct {
		secure, ws, portGiven bool
		want                  []string
	}{
		{false, false, false, []string{"a:1883", "[::1]:1883"}},
		{true, false, false, []string{"mqtts://a:8883", "mqtts://[::1]:8883"}},
		{false, true, false, []string{"ws://a:8083/mqtt", "ws://[::1]:8083/mqtt"}},
		{true, true, false, []string{"wss://a:8084/mqtt", "wss://[::1]:8084/mqtt"}},
		{true, true, true, []string{"wss://a:1883/mqtt", "wss://[::1]:1883/mqtt"}},
	} {
		q := q
		q.Secure, q.WS, q.PortGiven, q.WSPath = c.secure, c.ws, c.portGiven, "/mqtt"
		s, brokers, err := NewQuick(q)
		if err != nil || !slices.Equal(brokers, c.want) || s.Name != "conn-3" {
			t.Errorf("%+v: %v %v %v; want %v", c, s, brokers, err, c.want)
		}
	}
	// --ws-path: "mqtt" is taken as "/mqtt" (not "ws://a:8083mqtt", which is not a URL).
	for path, want := range map[string]string{"mqtt": "ws://a:8083/mqtt", "/ws/x": "ws://a:8083/ws/x",
		"": "ws://a:8083/mqtt", "/m?x": "error --ws-path \"/m?x\": a query", "m#x": "error --ws-path \"m#x\": a query"} {
		q := q
		q.WS, q.WSPath = true, path
		_, brokers, err := NewQuick(q)
		switch {
		case strings.HasPrefix(want, "error "):
			if err == nil || !strings.Contains(err.Error(), strings.TrimPrefix(want, "error ")) {
				t.Errorf("--ws-path %q: %v %v, want %s", path, brokers, err, want)
			}
		case err != nil || len(brokers) == 0 || brokers[0] != want:
			t.Errorf("--ws-path %q: %v %v, want %s", path, brokers, err, want)
		default:
			if _, err := parseBroker(brokers[0]); err != nil {
				t.Errorf("--ws-path %q: %s: %v", path, brokers[0], err)
			}
		}
	}
	q.Hosts, q.Secure = "", true
	if _, _, err := NewQuick(q); err == nil || !strings.Contains(err.Error(), "need the broker's --host") {
		t.Errorf("--ssl without -H: %v", err)
	}
	if got, err := QuickTopic("t/%i/%c/%u/%rand_5", "me", 0); err != nil || got != "t/$clientindex/$clientid/me/%rand_5" {
		t.Errorf("QuickTopic: %q %v", got, err)
	}
	if _, err := QuickTopic("t/%i", "", 7); err == nil {
		t.Error("QuickTopic with a start number and %i: no error")
	}
}

// TestQuickPubArrival: pub's --arrival and --burst-size become the publishers' arrival and
// burst_size, and a bad one is the scenario's error naming the field.
func TestQuickPubArrival(t *testing.T) {
	build := func(arrival string, burst int) (*Scenario, error) {
		fields, params, err := QuickPub{Topic: "t/%i", Size: 64, IntervalMS: 100, Arrival: arrival, BurstSize: burst}.Parts()
		if err != nil {
			t.Fatal(err)
		}
		s, _, err := NewQuick(Quick{Verb: "pub", Type: "Publish", Group: "publishers", Fields: fields, Params: params,
			Count: 2, IntervalMS: 10, Keepalive: 60, Version: 4, Prefix: "p-", Duration: time.Second})
		if err == nil {
			err = s.Validate()
		}
		return s, err
	}
	if s, err := build("burst", 5); err != nil || s.Publishers.Arrival != ArrivalBurst || s.Publishers.BurstSize != 5 {
		t.Errorf("--arrival burst --burst-size 5: %v, %v", s, err)
	}
	if s, err := build("", 0); err != nil || s.Publishers.Arrival != "" || s.Publishers.BurstSize != 0 {
		t.Errorf("no --arrival: %v, %v", s, err)
	}
	if _, err := build("poisson", 3); err == nil || !strings.Contains(err.Error(), "publishers.burst_size: 3, but arrival is \"poisson\"") {
		t.Errorf("--arrival poisson --burst-size 3: %v", err)
	}
}
