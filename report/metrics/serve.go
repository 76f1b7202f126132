package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Server serves a Live collector's /metrics over HTTP.
type Server struct {
	srv  *http.Server
	ln   net.Listener
	done chan struct{}
}

// CheckAddr checks a --metrics address: HOST:PORT with a loopback HOST (127.0.0.0/8, ::1,
// localhost) unless public, which allows any.
func CheckAddr(addr string, public bool) error {
	return CheckFlagAddr("metrics", "9464", addr, public)
}

// CheckFlagAddr is CheckAddr for the address of the flag --name (its example port
// example), which --name-public makes public.
func CheckFlagAddr(name, example, addr string, public bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		return fmt.Errorf("--%s %q: want HOST:PORT, e.g. 127.0.0.1:%s", name, addr, example)
	}
	if public {
		return nil
	}
	if host == "localhost" {
		return nil
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.IsLoopback() {
		return fmt.Errorf("--%s %s: not a loopback address; it is served on loopback only "+
			"(e.g. 127.0.0.1:%s) unless --%s-public allows %q", name, addr, example, name, host)
	}
	return nil
}

// Serve listens on addr and serves l at /metrics (and a pointer to it at /). It returns
// once it listens: a taken port is an error naming it.
func Serve(addr string, l *Live) (*Server, error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(l); err != nil {
		return nil, fmt.Errorf("BUG: cannot register the metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		_, _ = fmt.Fprintln(w, "mqblast: the run's metrics are at /metrics")
	})
	return ServeHandler("metrics", addr, mux)
}

// ServeHandler listens on addr, the address of the flag --name, and serves h there. It
// returns once it listens: a taken port is an error naming it.
func ServeHandler(name, addr string, h http.Handler) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("--%s %s: the port is taken (another process listens there): choose another port", name, addr)
		}
		return nil, fmt.Errorf("--%s %s: cannot listen: %w", name, addr, err)
	}
	s := &Server{srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}, ln: ln, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln)
	}()
	return s, nil
}

// Addr returns the address it listens on (with the port chosen for port 0).
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops serving, letting the scrapes under way finish (up to 2 s).
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	<-s.done
	return err
}
