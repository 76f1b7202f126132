package scenario

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestBrokerURLs: --broker takes TLS and WebSocket URLs into the server (scheme, path and
// the scheme's default port), a scenario's server.scheme and server.path make the plan's
// broker a URL, and bad ones are refused with their JSON path.
func TestBrokerURLs(t *testing.T) {
	t.Parallel()
	s, _ := Builtin("quick-p2p-100")
	if err := s.SetBrokers([]string{"mqtts://broker.example"}); err != nil {
		t.Fatal(err)
	}
	if sv := s.Server; sv.Scheme != "mqtts" || sv.Hostname != "broker.example" || sv.Port != 8883 || sv.Path != "" {
		t.Errorf("mqtts: %+v", sv)
	}
	p, err := NewPlan(s)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"mqtts://broker.example:8883"}, p.Brokers()); diff != "" {
		t.Errorf("plan brokers (-want +got):\n%s", diff)
	}
	if err := s.SetBrokers([]string{"ws://[::1]:9001, wss://h/custom", "10.0.0.1:1883"}); err != nil {
		t.Fatal(err)
	}
	want := []string{"ws://[::1]:9001/mqtt", "wss://h:8084/custom", "10.0.0.1:1883"}
	if diff := cmp.Diff(want, s.Server.Brokers); diff != "" || s.Server.Scheme != "ws" || s.Server.Path != "/mqtt" {
		t.Errorf("brokers %+v (-want +got):\n%s", s.Server, diff)
	}
	if err := s.SetBrokers([]string{"127.0.0.1:1883"}); err != nil || s.Server.Scheme != "" || s.Server.Path != "" {
		t.Errorf("plain broker after URLs: %v %+v", err, s.Server)
	}
	for _, bad := range []struct{ in, want string }{
		{"http://h", `scheme "http"`},
		{"mqtts://h/x", "only for ws"},
		{"ws://:80", "no host"},
		{"wss://h:70000", "port"},
	} {
		if err := s.SetBrokers([]string{bad.in}); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("--broker %s: %v, want %q", bad.in, err, bad.want)
		}
	}
	js := `{"type":"Connections","publishers":{"client_count":1},"server":{"hostname":"h","port":8084,"scheme":"wss","path":"/ws"}}`
	s, err = Parse("t.json", []byte(js))
	if err != nil {
		t.Fatal(err)
	}
	if p, err = NewPlan(s); err != nil || p.Brokers()[0] != "wss://h:8084/ws" {
		t.Errorf("scenario server: %v %v", err, p)
	}
	for _, bad := range []struct{ js, want string }{
		{`{"hostname":"h","scheme":"https"}`, `server.scheme: "https" is not a scheme`},
		{`{"hostname":"h","scheme":"mqtts","path":"/x"}`, "server.path: \"/x\": a path is only for scheme ws or wss"},
		{`{"hostname":"h","scheme":"ws","path":"x"}`, "server.path: \"x\" does not start with /"},
		{`{"brokers":["ftp://h"]}`, "server.brokers[0]"},
	} {
		s, err := Parse("t.json", []byte(`{"type":"Connections","publishers":{"client_count":1},"server":`+bad.js+`}`))
		if err == nil {
			err = s.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: %v, want %q", bad.js, err, bad.want)
		}
	}
}
