package sink_test

import (
	"io"
	"net"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mqblast/mqblast/codec"
)

// dialConnected opens n MQTT 3.1.1 connections to addr and waits for their CONNACKs.
func dialConnected(b *testing.B, addr string, n int, prefix string) []net.Conn {
	b.Helper()
	conns := make([]net.Conn, n)
	for i := range conns {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = nc.Close() })
		if _, err := nc.Write(codec.AppendConnect(nil, &codec.Connect{ClientID: []byte(prefix + strconv.Itoa(i)), CleanStart: true}, codec.V311)); err != nil {
			b.Fatal(err)
		}
		conns[i] = nc
	}
	for _, nc := range conns {
		var ack [4]byte
		if _, err := io.ReadFull(nc, ack[:]); err != nil {
			b.Fatal(err)
		}
	}
	return conns
}

// BenchmarkIdleConnectionRSS is the sink process's resident memory per idle connection
// (connected, nothing subscribed): metric rss-B/conn, over 5,000 connections to a new sink
// process per iteration.
// Budget: at most 1 KiB.
func BenchmarkIdleConnectionRSS(b *testing.B) {
	const n = 5000
	var perConn float64
	for range b.N { // a fresh process each time: a second round would reuse the first's heap
		p := startChild(b, 0)
		before := p.stats(b).RSS
		conns := dialConnected(b, p.addr, n, "idle")
		after := p.stats(b)
		if after.Connections != n {
			b.Fatalf("%d connections open, want %d", after.Connections, n)
		}
		perConn += float64(after.RSS-before) / n
		for _, nc := range conns {
			_ = nc.Close()
		}
	}
	b.ReportMetric(perConn/float64(b.N), "rss-B/conn")
}

// BenchmarkFanout is the sink process's CPU per relayed QoS 0 message (16-byte payload) in a
// fan-out of 20 publishers to 1,000 subscribers of test/#, at 2,000 publishes a second (2M
// copies a second, fanout-20-1000-20-2M); b.N is the number of copies. Metrics: sink-ns/copy
// (budget: 300) and copies/write, for each flush delay. The subscribers read in this process.
func BenchmarkFanout(b *testing.B) {
	for _, d := range []time.Duration{0, time.Millisecond, 5 * time.Millisecond} {
		b.Run("flush="+d.String(), func(b *testing.B) { benchFanout(b, d) })
	}
}

func benchFanout(b *testing.B, flush time.Duration) {
	const subs, pubs, rate = 1000, 20, 2000
	p := startChild(b, flush)
	sc := dialConnected(b, p.addr, subs, "sub")
	for i, nc := range sc {
		if _, err := nc.Write(codec.AppendSubscribe(nil, &codec.Subscribe{ID: 1, Filters: []codec.Subscription{{Filter: []byte("test/#")}}}, codec.V311)); err != nil {
			b.Fatal(err)
		}
		var ack [5]byte
		if _, err := io.ReadFull(nc, ack[:]); err != nil || ack[0] != 0x90 {
			b.Fatalf("SUBACK %d: %x %v", i, ack, err)
		}
	}
	pc := dialConnected(b, p.addr, pubs, "pub")
	one := codec.AppendPublish(nil, &codec.Publish{Topic: []byte("test/00"), Payload: make([]byte, 16)}, codec.V311)
	publishes := max(1, b.N/subs)
	copies := int64(publishes * subs)
	var got atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	per := runtime.NumCPU() * 4
	for r := range per { // a few readers, each over many subscribers, discarding
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 64<<10)
			for i := r; i < subs; i += per {
				_ = sc[i].SetReadDeadline(time.Time{})
			}
			for {
				select {
				case <-stop:
					return
				default:
				}
				for i := r; i < subs; i += per {
					_ = sc[i].SetReadDeadline(time.Now().Add(time.Millisecond))
					n, _ := sc[i].Read(buf)
					got.Add(int64(n / len(one)))
				}
			}
		}()
	}
	st0 := p.stats(b)
	b.ResetTimer()
	start := time.Now()
	for k := range publishes {
		due := start.Add(time.Duration(k) * time.Second / rate)
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
		if _, err := pc[k%pubs].Write(one); err != nil {
			b.Fatal(err)
		}
	}
	for deadline := time.Now().Add(30 * time.Second); got.Load() < copies && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	b.StopTimer()
	close(stop)
	wg.Wait()
	st := p.stats(b)
	relayed := st.RelayedTotal() - st0.RelayedTotal()
	if relayed != uint64(copies) || st.Dropped.Total() != 0 {
		b.Fatalf("relayed %d of %d, dropped %+v", relayed, copies, st.Dropped)
	}
	b.ReportMetric(float64(st.CPU-st0.CPU)/float64(relayed), "sink-ns/copy")
	b.ReportMetric(float64(relayed)/float64(st.Writes-st0.Writes), "copies/write")
}
