package bench

import (
	"context"
	"testing"
	"time"

	"github.com/mqblast/mqblast/codec"
	"github.com/mqblast/mqblast/internal/fastbroker"
	"github.com/mqblast/mqblast/reactor"
)

// benchEngine starts an engine of one client against srv and waits for it to connect.
func benchEngine(b *testing.B, srv *fastbroker.Server, spec reactor.ClientSpec, rec *Recorder) *reactor.Engine {
	b.Helper()
	e, err := reactor.New(reactor.Config{Brokers: []string{srv.Addr()}, Clients: 1, Loops: 1,
		Client: func(int) reactor.ClientSpec { return spec }, Observer: rec})
	if err != nil {
		b.Fatal(err)
	}
	if err := e.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = e.Stop() })
	if err := e.Connect(context.Background(), nil); err != nil || e.Open() != 1 {
		b.Fatalf("connect: %v", err)
	}
	return e
}

// BenchmarkClientReceive is the client's own CPU per received message with latency
// recording and sequence checks, against a server that streams pre-encoded PUBLISH packets
// as fast as the socket takes them (it costs almost nothing). Metric: cpu-ns/msg.
func BenchmarkClientReceive(b *testing.B) {
	srv, err := fastbroker.Start("127.0.0.1:0", fastbroker.Options{Stream: true, StreamCount: b.N,
		Payload: func(seq uint32, dst []byte) []byte {
			var h [16]byte
			reactor.PutHeader(h[:], time.Now().UnixNano(), 0, seq)
			return append(dst, h[:]...)
		}})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close() //nolint:errcheck
	rec := NewRecorder(1)
	now := time.Now()
	rec.SetWindow(now.Add(-time.Hour).UnixNano(), now.Add(time.Hour).UnixNano())
	b.ReportAllocs()
	cpu0 := cpuTime()
	b.ResetTimer()
	e := benchEngine(b, srv, reactor.ClientSpec{ID: "recv", Version: 4, CleanStart: true,
		Subscriptions: []codec.Subscription{{Filter: []byte("bench/#")}}}, rec)
	s := NewSnapshot()
	for s.Received < int64(b.N) {
		time.Sleep(5 * time.Millisecond)
		e.OnLoops(func(i int) { rec.Take(i, s) })
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/msg")
	if s.Latency.Count() != int64(b.N) || s.OutOfOrder != 0 || s.Duplicated != 0 {
		b.Fatalf("latency count %d of %d, out of order %d, duplicated %d", s.Latency.Count(), b.N, s.OutOfOrder, s.Duplicated)
	}
}

// BenchmarkClientPublish is the client's own CPU per published QoS 0 message (16 bytes, on
// the open-loop schedule at 2M msg/s, so it always has a backlog to batch) against a server
// that swallows them. Metric: cpu-ns/msg.
func BenchmarkClientPublish(b *testing.B) {
	srv, err := fastbroker.Start("127.0.0.1:0", fastbroker.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close() //nolint:errcheck
	rec := NewRecorder(1)
	b.ReportAllocs()
	cpu0 := cpuTime()
	b.ResetTimer()
	e := benchEngine(b, srv, reactor.ClientSpec{ID: "pub", Version: 4, CleanStart: true,
		Publish: &reactor.PublishSpec{Topic: []byte("bench/x"), Rate: 2e6, Count: b.N, PayloadSize: 16, Receivers: 1}}, rec)
	e.StartPublishing(0)
	for srv.Stats().Received[0] < uint64(b.N) {
		time.Sleep(5 * time.Millisecond)
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/msg")
}
