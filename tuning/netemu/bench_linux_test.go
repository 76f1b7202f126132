package netemu_test

import (
	"context"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/mqblast/mqblast/tuning"
)

// TestBenchNet is `make bench-net`, not part of the suite (MQBLAST_BENCH_NET=1): QoS 0 round
// trips through Mosquitto in the broker namespace under every named profile, interleaved in
// rounds, with the median shift against local; then 1 % loss on a 200 MiB transfer as TCP
// retransmissions; and the emulator's CPU per frame for both kinds of traffic.
func TestBenchNet(t *testing.T) {
	if os.Getenv("MQBLAST_BENCH_NET") == "" {
		t.Skip("make bench-net runs this (MQBLAST_BENCH_NET=1)")
	}
	l := start(t, "local")
	m := dialMQTT(t, l, startMosquitto(t, l), "bench")
	names := []string{"local", "optimal", "typical", "worst", "cloud"}
	rtts := map[string][]time.Duration{}
	cpu := map[string]time.Duration{}
	frames := map[string]uint64{}
	for range 10 {
		for _, name := range names {
			p := mustProfile(t, name)
			p.Up.Loss, p.Down.Loss = 0, 0 // a lost segment costs an RTO: not the delay under test
			if err := l.SetProfile(p); err != nil {
				t.Fatal(err)
			}
			m.roundTrip(t)
			before := l.Stats()
			for range 50 {
				rtts[name] = append(rtts[name], m.roundTrip(t))
				time.Sleep(2 * time.Millisecond)
			}
			after := l.Stats()
			cpu[name] += after.CPU - before.CPU
			frames[name] += after.Up.Frames + after.Down.Frames - before.Up.Frames - before.Down.Frames
		}
	}
	base := median(rtts["local"])
	t.Logf("%-8s %6s %10s %10s %10s %8s %12s", "profile", "n", "median", "shift", "2×delay", "error", "CPU/frame")
	for _, name := range names {
		p := mustProfile(t, name)
		want := p.Up.Delay + p.Down.Delay
		shift := median(rtts[name]) - base
		errPct := 0.0
		if want > 0 {
			errPct = 100 * (float64(shift)/float64(want) - 1)
		}
		t.Logf("%-8s %6d %10v %10v %10v %+7.1f%% %12v", name, len(rtts[name]), median(rtts[name]).Round(time.Microsecond),
			shift.Round(time.Microsecond), want, errPct, (cpu[name] / time.Duration(max(frames[name], 1))).Round(100*time.Nanosecond))
	}

	lossy := mustProfile(t, "delay=1ms,up:loss=1%")
	if err := l.SetProfile(lossy); err != nil {
		t.Fatal(err)
	}
	ln, err := l.Listen(context.Background(), "tcp", net.JoinHostPort(l.BrokerAddr().String(), "7002"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan int64, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- -1
			return
		}
		n, _ := io.Copy(io.Discard, c)
		done <- n
	}()
	before, st0 := counters(t, l), l.Stats()
	c, err := l.Dial(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	const size = 200 << 20
	buf := make([]byte, 64<<10)
	t0 := time.Now()
	for sent := 0; sent < size; sent += len(buf) {
		if _, err := c.Write(buf); err != nil {
			t.Fatal(err)
		}
	}
	_ = c.Close()
	<-done
	took := time.Since(t0)
	after, st1 := counters(t, l), l.Stats()
	out, retrans := after["Tcp.OutSegs"]-before["Tcp.OutSegs"], after["Tcp.RetransSegs"]-before["Tcp.RetransSegs"]
	f := st1.Up.Frames + st1.Down.Frames - st0.Up.Frames - st0.Down.Frames
	t.Logf("%s: %d MiB in %v (%.0f Mbit/s): %d segments, %d retransmitted = %.3f %% (%.2f × 1 %%); emulator dropped %d of %d up",
		tuning.Profile(lossy), size>>20, took.Round(time.Millisecond), float64(size)*8/took.Seconds()/1e6, out, retrans,
		100*float64(retrans)/float64(out), float64(retrans)/float64(out)/0.01, st1.Up.Lost-st0.Up.Lost, st1.Up.Frames-st0.Up.Frames)
	t.Logf("bulk: emulator CPU %v for %d frames = %v per frame, %.1f frames per wake; kernel drops %d, queue overflow %d",
		st1.CPU-st0.CPU, f, (st1.CPU-st0.CPU)/time.Duration(max(f, 1)), float64(f)/float64(max(st1.Wakes-st0.Wakes, 1)),
		st1.Up.KernelDrops+st1.Down.KernelDrops, st1.Up.Overflow+st1.Down.Overflow)
}
