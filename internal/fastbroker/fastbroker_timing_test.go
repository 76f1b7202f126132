package fastbroker

import (
	"io"
	"testing"
	"time"

	"github.com/mqblast/mqblast/codec"
)

var sinkN int

// reportCPU reports msgs/s and the CPU the whole process (server and the benchmark's minimal
// client) spent per message, an upper bound on the server's share.
func reportCPU(b *testing.B, t0 time.Time, cpu0 time.Duration, msgs int) {
	b.Helper()
	elapsed := time.Since(t0)
	b.ReportMetric(float64(msgs)/elapsed.Seconds(), "msgs/s")
	if cpu0 >= 0 {
		b.ReportMetric(float64(processCPU()-cpu0)/float64(msgs), "cpu-ns/msg")
	}
}

// BenchmarkStream measures streaming to one subscriber that reads and discards the bytes: one
// op is one message.
func BenchmarkStream(b *testing.B) {
	for _, v := range []codec.Version{codec.V311, codec.V5} {
		b.Run(v.String()+"/16B", func(b *testing.B) {
			size := codec.SizePublish(&codec.Publish{Topic: []byte("bench/x"), Payload: make([]byte, 16)}, v)
			b.ReportAllocs()
			b.SetBytes(int64(size))
			s := start(b, Options{Stream: true, StreamCount: b.N, Payload: stamp})
			c := dial(b, s, v)
			c.connect("sub")
			buf := make([]byte, 1<<20)
			b.ResetTimer()
			t0, cpu0 := time.Now(), processCPU()
			c.subscribe(1, 0, "bench/#")
			got, want := len(c.in)-c.used, b.N*size
			for got < want {
				n, err := c.nc.Read(buf)
				if err != nil {
					b.Fatal(err)
				}
				got += n
			}
			b.StopTimer()
			reportCPU(b, t0, cpu0, b.N)
			if got != want {
				b.Fatalf("read %d bytes, want %d", got, want)
			}
		})
	}
}

// BenchmarkSwallow measures the server taking publishes from one client that writes them 64 KiB
// at a time: one op is one message. At QoS 1 a goroutine of the client reads the PUBACKs.
func BenchmarkSwallow(b *testing.B) {
	const v = codec.V311
	for _, qos := range []codec.QoS{0, 1} {
		b.Run("qos"+string(rune('0'+qos))+"/16B", func(b *testing.B) {
			pub := codec.Publish{QoS: qos, ID: 1, Topic: []byte("bench/1"), Payload: make([]byte, 16)}
			size := codec.SizePublish(&pub, v)
			var chunk []byte
			for len(chunk) < 64<<10 {
				chunk = codec.AppendPublish(chunk, &pub, v)
			}
			per := len(chunk) / size
			b.ReportAllocs()
			b.SetBytes(int64(size))
			s := start(b, Options{})
			c := dial(b, s, v)
			c.connect("pub")
			acks := make(chan error, 1)
			go func() { // PUBACKs (4 bytes each) then the PINGRESP (2)
				want := 2
				if qos == 1 {
					want += 4 * b.N
				}
				_, err := io.CopyN(io.Discard, c.nc, int64(want))
				acks <- err
			}()
			b.ResetTimer()
			t0, cpu0 := time.Now(), processCPU()
			for left := b.N; left > 0; left -= per {
				n := min(left, per)
				if _, err := c.nc.Write(chunk[:n*size]); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := c.nc.Write(codec.AppendPingreq(nil)); err != nil {
				b.Fatal(err)
			}
			if err := <-acks; err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			reportCPU(b, t0, cpu0, b.N)
			if got := s.Stats().Received[qos]; got != uint64(b.N) {
				b.Fatalf("server received %d, want %d", got, b.N)
			}
		})
	}
}

// BenchmarkAppendBatch measures encoding the stream without the socket: one op is one message.
func BenchmarkAppendBatch(b *testing.B) {
	for _, v := range []codec.Version{codec.V311, codec.V5} {
		for _, payload := range []func(uint32, []byte) []byte{nil, stamp} {
			name := v.String() + "/callback"
			if payload == nil {
				name = v.String() + "/fixed"
			}
			b.Run(name, func(b *testing.B) {
				st := newStream(v, []byte("bench/x"), payload)
				buf := make([]byte, 0, 2*batchBytes)
				b.ReportAllocs()
				b.SetBytes(int64(codec.SizePublish(&codec.Publish{Topic: []byte("bench/x"), Payload: make([]byte, 16)}, v)))
				for left := b.N; left > 0; {
					var n int
					buf, n = st.appendBatch(buf[:0], left)
					left -= n
				}
				sinkN = len(buf)
			})
		}
	}
}

// BenchmarkProcess measures framing and answering a read of 4000 publishes without the socket:
// one op is one message.
func BenchmarkProcess(b *testing.B) {
	for _, v := range []codec.Version{codec.V311, codec.V5} {
		for _, qos := range []codec.QoS{0, 1} {
			b.Run(v.String()+"/qos"+string(rune('0'+qos)), func(b *testing.B) {
				pub := codec.Publish{QoS: qos, ID: 1, Topic: []byte("bench/1"), Payload: make([]byte, 16)}
				var in []byte
				const per = 4000
				for range per {
					in = codec.AppendPublish(in, &pub, v)
				}
				c := connectedConn(b, v)
				b.ReportAllocs()
				b.SetBytes(int64(len(in) / per))
				for left := b.N; left > 0; left -= per {
					c.out = c.out[:0]
					used, _, err := c.process(in[:min(left, per)*len(in)/per])
					if err != nil {
						b.Fatal(err)
					}
					sinkN += used
				}
			})
		}
	}
}
