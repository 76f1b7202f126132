package reactor

import (
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mqblast/mqblast/codec"
)

// The client's CPU per message on each transport, without a broker: the loop reads a
// prepared byte stream (PUBLISH packets, in WebSocket frames, in TLS records sealed before
// the timer starts) from one end of a socket pair, or publishes into it while the other end
// is drained raw. ns/op is per message; one goroutine does all the work, so it is CPU time.
// The TCP case is the baseline the others add to; tls and wss keep their tls.Conn,
// tls-loop and wss-loop run on the loop's record layer (TLS 1.3, AES-128-GCM).

var transports = []struct {
	name    string
	ws, tls bool
	layer   string
}{{"tcp", false, false, ""}, {"ws", true, false, ""}, {"tls", false, true, RecordLayerTLSConn}, {"wss", true, true, RecordLayerTLSConn},
	{"tls-loop", false, true, RecordLayerLoop}, {"wss-loop", true, true, RecordLayerLoop}}

// benchSession returns a loop and session on transport tr and the raw peer socket, with
// the broker's tls.Conn for sealing (nil without TLS).
func benchSession(b *testing.B, ws, secure bool, layer string) (*loop, *session, int, func([]byte) []byte) {
	var l *loop
	var s *session
	var peer int
	seal := func(p []byte) []byte { return p }
	if secure {
		var srv interface{ Write([]byte) (int, error) }
		tl, ts, tsrv, tpeer := tlsPairOn(b, 4, layer)
		l, s, peer, srv = tl, ts, tpeer, tsrv
		seal = func(p []byte) []byte { return sealRecords(b, srv, s, p) }
	} else {
		l, s, peer = testSession(b, 4)
	}
	if ws {
		if s.flags&sfTransport != 0 {
			l.transportOf(s).ws = true
		} else {
			l.setTransport(s, &transport{ws: true})
		}
		inner := seal
		seal = func(p []byte) []byte {
			var f []byte
			for len(p) > 0 {
				n := packetLen(p)
				f = append(f, serverFrameB(p[:n])...)
				p = p[n:]
			}
			return inner(f)
		}
	}
	return l, s, peer, seal
}

// processCPU is the process's user and system CPU time in ns.
func processCPU() int64 {
	var ru unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func serverFrameB(p []byte) []byte {
	if len(p) < 126 {
		return append([]byte{0x82, byte(len(p))}, p...)
	}
	return append([]byte{0x82, 126, byte(len(p) >> 8), byte(len(p))}, p...)
}

// sealRecords has the broker's tls.Conn seal p and returns the records as they reach the
// client's socket, read raw (the client has not seen them).
func sealRecords(b *testing.B, srv interface{ Write([]byte) (int, error) }, s *session, p []byte) []byte {
	done := make(chan struct{})
	go func() {
		for len(p) > 0 { // a write a batch's size, as a broker would
			n := min(len(p), 16<<10)
			_, _ = srv.Write(p[:n])
			p = p[n:]
		}
		close(done)
	}()
	var out []byte
	raw := make([]byte, 256<<10)
	for {
		n, err := unix.Read(int(s.fd), raw)
		if err == nil {
			out = append(out, raw[:n]...)
			continue
		}
		select {
		case <-done:
			if errors.Is(err, unix.EAGAIN) {
				time.Sleep(20 * time.Millisecond)
				if n, err := unix.Read(int(s.fd), raw); err == nil {
					out = append(out, raw[:n]...)
					continue
				}
				return out
			}
		default:
			time.Sleep(100 * time.Microsecond)
		}
	}
}

// BenchmarkTransportReceive: QoS 0 PUBLISH of 16 bytes of payload, 64 KiB per read.
func BenchmarkTransportReceive(b *testing.B) {
	for _, tr := range transports {
		b.Run(tr.name, func(b *testing.B) {
			l, s, peer, seal := benchSession(b, tr.ws, tr.tls, tr.layer)
			payload := make([]byte, HeaderSize)
			PutHeader(payload, time.Now().UnixNano(), 0, 0, 0)
			p := codec.AppendPublish(nil, &codec.Publish{Topic: []byte("bench/x"), Payload: payload}, codec.V311)
			var plain []byte
			for range b.N {
				plain = append(plain, p...)
			}
			wire := seal(plain)
			b.ReportAllocs()
			cpu0 := processCPU()
			b.ResetTimer()
			for len(wire) > 0 {
				n, err := unix.Write(peer, wire[:min(len(wire), 64<<10)])
				if err != nil {
					b.Fatal(err)
				}
				wire = wire[n:]
				l.read(s)
			}
			b.StopTimer()
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/msg")
			if s.state != stConnected {
				b.Fatalf("session state %d", s.state)
			}
		})
	}
}

// BenchmarkTransportPublish: QoS 0 PUBLISH of 16 bytes of payload, 50 per publish pass.
func BenchmarkTransportPublish(b *testing.B) {
	for _, tr := range transports {
		b.Run(tr.name, func(b *testing.B) {
			l, s, peer, _ := benchSession(b, tr.ws, tr.tls, tr.layer)
			sp := &PublishSpec{Topic: []byte("bench/x"), Rate: 1e6, PayloadSize: 16, Receivers: 1}
			l.e.pubStart.Store(1)
			l.startPublisher(s, sp, 0, 10, false)
			drain := make([]byte, 1<<20)
			now := l.e.now()
			b.ReportAllocs()
			cpu0 := processCPU()
			b.ResetTimer()
			for sent := 0; sent < b.N; sent += 50 {
				now += int64(50 * time.Microsecond)
				l.publishDue(now)
				if _, err := unix.Read(peer, drain); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/msg")
		})
	}
}

// BenchmarkTLSRebuild: what waking an idle connection on the loop's record layer costs, a
// PINGREQ sealed after its cipher state was released (rebuilt), beside the same seal warm.
func BenchmarkTLSRebuild(b *testing.B) {
	for _, released := range []bool{false, true} {
		b.Run(map[bool]string{false: "warm", true: "rebuilt"}[released], func(b *testing.B) {
			l, s, _, _ := tlsPairOn(b, 4, RecordLayerLoop)
			t := l.transportOf(s).sec
			ping := codec.AppendPingreq(nil)
			b.ReportAllocs()
			cpu0 := processCPU()
			b.ResetTimer()
			for range b.N {
				if released {
					t.rec.Release()
				}
				l.wire = t.rec.Seal(l.wire[:0], ping)
			}
			b.StopTimer()
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}
