//go:build !race

package netemu

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/mqblast/mqblast/tuning"
)

// TestBridgeAllocs: reading, queueing and sending a frame allocates nothing.
func TestBridgeAllocs(t *testing.T) {
	p, _ := tuning.ParseProfile("delay=1ms,jitter=0.5ms,loss=1%")
	b, broker, client := testBridge(t, p)
	defer b.close()
	f := frame(0x0800, 1)
	if err := unix.SetNonblock(broker, true); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2048)
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := unix.Write(client, f); err != nil {
			t.Fatal(err)
		}
		now := nanotime()
		b.read(&b.up, &p.Up, now, realtime()-now)
		b.send(&b.up, now+int64(p.Up.Delay+p.Up.Jitter))
		if b.up.q.n != 0 {
			t.Fatal("the frame is still queued")
		}
		if b.up.st.sent.Load() > 0 {
			_, _ = unix.Read(broker, buf) // drain what went through (1 % is lost)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per frame, want 0", allocs)
	}
}
