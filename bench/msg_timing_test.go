package bench

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/mqblast/mqblast/codec"
	"github.com/mqblast/mqblast/internal/payloadtpl"
	"github.com/mqblast/mqblast/reactor"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/tuning"
)

// benchEngine starts an engine of one client against addr and waits for it to connect.
func benchEngine(b *testing.B, addr string, spec reactor.ClientSpec, rec *Recorder) *reactor.Engine {
	b.Helper()
	e, err := reactor.New(reactor.Config{Brokers: []string{addr}, Clients: 1, Loops: 1,
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

// BenchmarkClientReceive is the client's own CPU per received message with latency recording
// and sequence checks. The sink runs in a child process with a feeder that publishes to it as
// fast as it reads, so the CPU this process measures (rusage) is the client's alone. Metrics:
// cpu-ns/msg, the client's; sink-ns/msg, the sink process's per relayed message (feeder
// included).
func BenchmarkClientReceive(b *testing.B) {
	srv := startBenchSink(b)
	rec := NewRecorder(1)
	now := time.Now()
	rec.SetWindow(now.Add(-time.Hour).UnixNano(), now.Add(time.Hour).UnixNano())
	b.ReportAllocs()
	e := benchEngine(b, srv.addr, reactor.ClientSpec{ID: "recv", Version: 4, CleanStart: true,
		Subscriptions: []codec.Subscription{{Filter: []byte("bench/#")}}}, rec)
	st0 := srv.stats(b)
	cpu0 := tuning.SelfCPU()
	b.ResetTimer()
	srv.send(b, "feed bench/x "+strconv.Itoa(b.N)) // once the subscription is in place
	s := result.NewSnapshot()
	for s.Received < int64(b.N) {
		time.Sleep(5 * time.Millisecond)
		e.OnLoops(func(i int) { rec.Take(i, s) })
	}
	b.StopTimer()
	cpu := tuning.SelfCPU() - cpu0
	st := srv.stats(b)
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/msg")
	b.ReportMetric(float64(st.CPU-st0.CPU)/float64(b.N), "sink-ns/msg")
	if s.Latency.Count() != int64(b.N) || s.OutOfOrder != 0 || s.Duplicated != 0 || st.Dropped.Total() != 0 {
		b.Fatalf("latency count %d of %d, out of order %d, duplicated %d, sink dropped %+v",
			s.Latency.Count(), b.N, s.OutOfOrder, s.Duplicated, st.Dropped)
	}
}

// BenchmarkClientPublish is the client's own CPU per published QoS 0 message (16 bytes, on
// the open-loop schedule at 2M msg/s, so it always has a backlog to batch) against the sink in
// a child process with no subscriber, which reads and drops them. Metrics: cpu-ns/msg, the
// client's; sink-ns/msg, the sink process's per message taken in.
func BenchmarkClientPublish(b *testing.B) {
	clientPublish(b, &reactor.PublishSpec{Topic: []byte("bench/x"), PayloadSize: 16})
}

// BenchmarkClientPublishTemplate: BenchmarkClientPublish with a payload rendered per message
// from a JSON template (template), against a fixed payload of the same size, its longest
// rendering (fixed): the rendering is to cost at most 1.3 × fixed in cpu-ns/msg, and nothing
// allocated. device has every kind of placeholder (eleven); reading, a sensor's four and the
// mark.
func BenchmarkClientPublishTemplate(b *testing.B) {
	for _, c := range []struct{ name, src string }{
		{"device", `{"device":"{{client_id}}","n":{{client_index}},"seq":{{seq}},"ts":{{unix_ms}},"at":"{{rfc3339}}",` +
			`"temp":{{rand_float 18.0 31.5}},"rpm":{{rand_int 900 3100}},"state":"{{choice idle|run|fault}}","fw":"{{rand_text 8}}","m":"{{mark}}"}`},
		{"reading", `{"device":"{{client_id}}","seq":{{seq}},"ts":{{unix_ms}},"temp":{{rand_float 18.0 31.5}},"m":"{{mark}}"}`},
	} {
		tp, err := payloadtpl.Compile(c.src)
		if err != nil {
			b.Fatal(err)
		}
		id := []byte("mqblast-pub-17")
		size := reactor.MeasuredSize + tp.MaxLen(len(id))
		b.Run(c.name+"/fixed", func(b *testing.B) {
			clientPublish(b, &reactor.PublishSpec{Topic: []byte("bench/x"), PayloadSize: size})
		})
		b.Run(c.name+"/template", func(b *testing.B) {
			clientPublish(b, &reactor.PublishSpec{Topic: []byte("bench/x"), PayloadSize: size, Template: tp, ClientID: id, ClientIndex: 17})
		})
	}
}

// clientPublish measures the client publishing b.N messages of sp (its topic and payload)
// to the sink at 2M msg/s.
func clientPublish(b *testing.B, sp *reactor.PublishSpec) {
	sp.Rate, sp.Count, sp.Receivers = 2e6, b.N, 1
	b.SetBytes(int64(sp.PayloadSize))
	srv := startBenchSink(b)
	rec := NewRecorder(1)
	b.ReportAllocs()
	st0 := srv.stats(b)
	cpu0 := tuning.SelfCPU()
	b.ResetTimer()
	e := benchEngine(b, srv.addr, reactor.ClientSpec{ID: "pub", Version: 4, CleanStart: true, Publish: sp}, rec)
	e.StartPublishing(0)
	// Until the sink has them all. A message the client left unsent (a busy host) never
	// reaches it: when the sink's count stops moving, the client's own figures say why,
	// instead of a wait without end. Only then, so that the loop is not woken meanwhile.
	var st childStats
	last, moved := uint64(0), time.Now()
	for st = srv.stats(b); st.PublishIn[0]-st0.PublishIn[0] < uint64(b.N); st = srv.stats(b) {
		if in := st.PublishIn[0] - st0.PublishIn[0]; in != last {
			last, moved = in, time.Now()
		} else if time.Since(moved) > 5*time.Second {
			s := result.NewSnapshot()
			e.OnLoops(func(i int) { rec.Take(i, s) })
			b.Fatalf("the sink took in %d of %d messages and no more for 5s: the client wrote %d, left %v unsent (a host too busy for the 2M msg/s schedule)",
				in, b.N, s.Published, s.Unsent)
		}
		time.Sleep(5 * time.Millisecond)
	}
	b.StopTimer()
	b.ReportMetric(float64(tuning.SelfCPU()-cpu0)/float64(b.N), "cpu-ns/msg")
	b.ReportMetric(float64(st.CPU-st0.CPU)/float64(b.N), "sink-ns/msg")
}
