package sink_test

import (
	"crypto/tls"
	"io"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mqblast/mqblast/codec"
	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/sink"
)

// BenchmarkTLSHandshake is the process's CPU per TLS handshake (client and server in this
// process, 4 clients at a time, each handshake followed by one round trip so that the
// server's side has ended): against the sink (the handshake in a goroutine fed by the event
// loop, then the loop's record layer, CONNECT/CONNACK) and against a bare crypto/tls server
// (Go's accept, a goroutine per connection over Go's netpoller: what a separate accept path
// enrolled into gnet would cost before the enrolment, echoing one byte). The client's share
// is the same in both; the difference is the server's. Run: go test -run '^$' -bench
// TLSHandshake ./sink.
func BenchmarkTLSHandshake(b *testing.B) {
	certs := testbroker.NewCerts(b)
	stc, err := sink.LoadTLS(certs.ServerCert, certs.ServerKey, "")
	if err != nil {
		b.Fatal(err)
	}
	ctc := clientTLS(b, certs, "", "")
	b.Run("sink", func(b *testing.B) {
		srv := startSink(b, sink.Config{TLS: stc})
		connect := codec.AppendConnect(nil, &codec.Connect{ClientID: []byte("h"), CleanStart: true, KeepAlive: 60}, codec.V311)
		handshakes(b, srv.Addr(), ctc, connect, 4) // a CONNACK is 4 bytes
	})
	b.Run("crypto-tls", func(b *testing.B) {
		ln, err := tls.Listen("tcp", "127.0.0.1:0", stc)
		if err != nil {
			b.Fatal(err)
		}
		defer ln.Close() //nolint:errcheck
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() {
					defer c.Close() //nolint:errcheck
					var one [1]byte
					if _, err := io.ReadFull(c, one[:]); err == nil {
						_, _ = c.Write(one[:])
					}
					_, _ = c.Read(one[:]) // until the client closes
				}()
			}
		}()
		handshakes(b, ln.Addr().String(), ctc, []byte{1}, 1)
	})
}

// handshakes runs b.N connections to addr, 4 at a time: handshake, send, read reply
// bytes back, close; and reports the process's CPU per connection.
func handshakes(b *testing.B, addr string, tc *tls.Config, send []byte, reply int) {
	var ru0, ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	start := time.Now()
	b.ResetTimer()
	var wg sync.WaitGroup
	next := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, reply)
			for range next {
				c, err := tls.Dial("tcp", addr, tc)
				if err != nil {
					b.Error(err)
					return
				}
				if _, err = c.Write(send); err == nil {
					_, err = io.ReadFull(c, buf)
				}
				if err != nil {
					b.Error(err)
				}
				_ = c.Close()
			}
		}()
	}
	for range b.N {
		next <- struct{}{}
	}
	close(next)
	wg.Wait()
	b.StopTimer()
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/conn")
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "conn/s")
}
