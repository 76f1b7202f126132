package run

import (
	"errors"
	"fmt"
	"testing"

	"github.com/mqblast/mqblast/reactor"
)

// TestErrorKinds: an error of a run says its kind through wrapping, the outermost kind
// first, and keeps its cause's message.
func TestErrorKinds(t *testing.T) {
	cause := errors.New("cause")
	err := fmt.Errorf("--net: %w", usage(cause))
	var re *Error
	if !errors.As(err, &re) || !errors.Is(re.Kind, ErrUsage) || !errors.Is(err, ErrUsage) || !errors.Is(err, cause) {
		t.Errorf("usage error %v: kind not found", err)
	}
	if err.Error() != "--net: cause" {
		t.Errorf("message %q", err)
	}
	inv := kind(ErrInvalid, usage(cause)) // a worker's runner that cannot be built
	if !errors.As(inv, &re) || !errors.Is(re.Kind, ErrInvalid) {
		t.Errorf("outer kind of %v: %v", inv, re.Kind)
	}
	if kind(ErrUsage, nil) != nil {
		t.Error("kind of nil is not nil")
	}
}

// TestTLSOptions: a TLS option without a TLS broker is a usage error; the options a worker
// gets are the ones given.
func TestTLSOptions(t *testing.T) {
	o := reactor.TLSOptions{CAFile: "ca.pem", Insecure: true, ALPN: []string{"mqtt", "x"}}
	if _, err := tlsConfig(o, []string{"127.0.0.1:1883"}); !errors.Is(err, ErrUsage) {
		t.Errorf("--cacert with a TCP broker: %v, want a usage error", err)
	}
	if c, err := tlsConfig(reactor.TLSOptions{}, []string{"127.0.0.1:1883"}); c != nil || err != nil {
		t.Errorf("no TLS: %v, %v", c, err)
	}
	got := fmt.Sprint(tlsArgs(o))
	if want := "[--cacert ca.pem --insecure --alpn mqtt,x]"; got != want {
		t.Errorf("worker args %s, want %s", got, want)
	}
}
