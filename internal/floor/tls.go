package floor

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"runtime"
	"syscall"
	"time"
)

// The TLS floor: what a TLS client set-up costs in crypto/tls alone. TLS dials Addr and
// runs a bare crypto/tls client handshake over it, Conns times one after the other on one
// thread, with the tls.Config it is given (make bench-tls gives it the one mqblast builds
// from the same options: the same roots, versions, cipher suites and curves), and closes
// each connection at once. mqblast's TLS set-up is held against it: its handshake's
// thread CPU against HandshakeUS, its CPU per connection set-up against ConnUS.

// TLSConfig is a TLS floor measurement.
type TLSConfig struct {
	Addr   string      // host:port of a TLS listener
	Config *tls.Config // the client's configuration (ServerName set)
	Conns  int         // handshakes measured (after 20 that are not)
}

// TLSResult is the TLS floor's measurement. HandshakeUS is the calling thread's CPU in
// Handshake() per handshake (what mqblast's tls_handshake_cpu_us measures); ConnUS the
// process's CPU (user + system, the garbage collector's included) per connection: socket,
// TCP connect, handshake, close.
type TLSResult struct {
	Conns       int     `json:"connections"`
	HandshakeUS float64 `json:"handshake_cpu_us"`
	ConnUS      float64 `json:"cpu_per_connection_us"`
	Resumed     int     `json:"resumed"`
	Version     string  `json:"version"`
	WallS       float64 `json:"wall_s"`
}

const tlsWarmup = 20

// TLS measures the TLS floor (see TLSConfig).
func TLS(cfg TLSConfig) (*TLSResult, error) {
	if cfg.Conns <= 0 || cfg.Config == nil {
		return nil, errors.New("floor: TLS needs Conns above 0 and a tls.Config")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	res := &TLSResult{Conns: cfg.Conns}
	var hs, proc0 time.Duration
	start := time.Now()
	for i := 0; i < tlsWarmup+cfg.Conns; i++ {
		if i == tlsWarmup {
			proc0, start = processCPU(), time.Now()
		}
		raw, err := net.DialTimeout("tcp", cfg.Addr, 10*time.Second)
		if err != nil {
			return nil, fmt.Errorf("floor: connect %s: %w", cfg.Addr, err)
		}
		c := tls.Client(raw, cfg.Config)
		t0 := threadCPU()
		err = c.Handshake()
		d := threadCPU() - t0
		if err != nil {
			_ = raw.Close()
			return nil, fmt.Errorf("floor: TLS handshake with %s: %w", cfg.Addr, err)
		}
		if i >= tlsWarmup {
			hs += d
			st := c.ConnectionState()
			if st.DidResume {
				res.Resumed++
			}
			res.Version = tls.VersionName(st.Version)
		}
		_ = raw.Close()
	}
	n := float64(cfg.Conns)
	res.WallS = time.Since(start).Seconds()
	res.HandshakeUS = float64(hs.Microseconds()) / n
	res.ConnUS = float64((processCPU() - proc0).Microseconds()) / n
	return res, nil
}

// processCPU is the process's CPU time, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
