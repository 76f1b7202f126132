package run

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mqblast/mqblast/internal/fail"
	"github.com/mqblast/mqblast/reactor"
	"github.com/mqblast/mqblast/run/spec"
)

// TestErrorKinds: an error of a run says its kind through wrapping, the outermost kind
// first, and keeps its cause's message.
func TestErrorKinds(t *testing.T) {
	cause := errors.New("cause")
	err := fmt.Errorf("--net: %w", usage(cause))
	var re *fail.Error
	if !errors.As(err, &re) || !errors.Is(re.Kind, errUsage) || !errors.Is(err, errUsage) || !errors.Is(err, cause) {
		t.Errorf("usage error %v: kind not found", err)
	}
	if err.Error() != "--net: cause" {
		t.Errorf("message %q", err)
	}
	inv := kind(errInvalid, usage(cause)) // a worker's runner that cannot be built
	if !errors.As(inv, &re) || !errors.Is(re.Kind, errInvalid) {
		t.Errorf("outer kind of %v: %v", inv, re.Kind)
	}
	if kind(errUsage, nil) != nil {
		t.Error("kind of nil is not nil")
	}
}

// TestTLSOptions: a TLS setting without a TLS broker is a usage error naming the Spec's
// fields; the engine's options are the Spec's.
func TestTLSOptions(t *testing.T) {
	o := spec.TLS{CAFile: "ca.pem", Insecure: true, ALPN: []string{"mqtt", "x"}}
	_, err := tlsConfig(tlsOptions(o), []string{"127.0.0.1:1883"})
	var fe *spec.Error
	if !errors.Is(err, errUsage) || !errors.As(err, &fe) || fe.Field != "tls" || !strings.Contains(err.Error(), "tls.cacert") {
		t.Errorf("a CA with a TCP broker: %v, want a usage error naming tls.cacert", err)
	}
	if c, err := tlsConfig(reactor.TLSOptions{}, []string{"127.0.0.1:1883"}); c != nil || err != nil {
		t.Errorf("no TLS: %v, %v", c, err)
	}
	want := reactor.TLSOptions{CAFile: "ca.pem", Insecure: true, ALPN: []string{"mqtt", "x"}}
	if got := tlsOptions(o); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("engine options %+v, want %+v", got, want)
	}
}
