package run

import (
	"errors"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/mqblast/mqblast/run/spec"
	"github.com/mqblast/mqblast/scenario"
)

// TestApplyBindFamily: --bind lo keeps lo's addresses of the broker's family, and source
// addresses of the other family are refused: from --bind a usage error, from the
// scenario's own parameters.bind an invalid scenario, each naming the broker's family.
func TestApplyBindFamily(t *testing.T) {
	load := func(t *testing.T) *scenario.Scenario {
		t.Helper()
		s, err := scenario.Resolve("quick-conn-100")
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for broker, want := range map[string]string{"127.0.0.1:1883": "127.0.0.1", "[::1]:1883": "::1"} {
		if ln, err := net.Listen("tcp", net.JoinHostPort(want, "0")); err != nil {
			t.Logf("no %s on this host: --broker %s not tried", want, broker)
			continue
		} else {
			_ = ln.Close()
		}
		s := load(t)
		if err := (changes{Brokers: []string{broker}, Bind: []string{"lo"}}).Apply(s); err != nil {
			t.Fatalf("--broker %s --bind lo: %v", broker, err)
		}
		if got := s.Parameters.Bind; !slices.Equal(got, []string{want}) {
			t.Errorf("--broker %s --bind lo: sources %v, want [%s]", broker, got, want)
		}
	}
	s := load(t) // no broker: the embedded one, on 127.0.0.1
	if err := (changes{Bind: []string{"lo"}}).Apply(s); err != nil || !slices.Equal(s.Parameters.Bind, []string{"127.0.0.1"}) {
		t.Errorf("--bind lo to the embedded broker: sources %v, %v", s.Parameters.Bind, err)
	}

	s = load(t)
	err := (changes{Sets: []string{"parameters.bind=::1"}, Brokers: []string{"127.0.0.1:1883"}}).Apply(s)
	if !errors.Is(err, errInvalid) || !strings.Contains(fmtErr(err), "quick-conn-100: parameters.bind ::1: IPv6 source addresses, but the broker 127.0.0.1 is IPv4") {
		t.Errorf("the scenario's bind ::1 to an IPv4 broker: %v, want an invalid scenario naming parameters.bind", err)
	}
	s = load(t)
	err = (changes{Brokers: []string{"127.0.0.1:1883"}, Bind: []string{"::1"}}).Apply(s)
	var fe *spec.Error
	if !errors.Is(err, errUsage) || !errors.As(err, &fe) || fe.Field != "bind" ||
		!strings.Contains(fmtErr(err), "bind ::1: IPv6 source addresses, but the broker 127.0.0.1 is IPv4") {
		t.Errorf("bind ::1 to an IPv4 broker: %v, want a usage error naming the field bind", err)
	}
	s = load(t)
	err = (changes{Brokers: []string{"[::1]:1883"}, Bind: []string{"127.0.0.2"}, Sink: true}).Apply(s)
	if err != nil {
		t.Errorf("--sink goes to 127.0.0.1 whatever the broker: --bind 127.0.0.2 refused: %v", err)
	}
}

func fmtErr(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}
