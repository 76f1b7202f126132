package reactor

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkPublishPass: the loop's publish pass alone, 50 QoS 0 messages of 32 bytes per
// pass over a socket pair, without a rate profile (the plan's schedule): the per-message
// cost of the schedule, encoding and the write, with none of a broker's.
func BenchmarkPublishPass(b *testing.B) {
	l, s, peer := testSession(b, 5)
	sp := &PublishSpec{Topic: []byte("bench/x"), QoS: 0, Rate: 1e6, PayloadSize: 32, Receivers: 1}
	l.e.pubStart.Store(1)
	l.startPublisher(s, sp, 0, 10, false)
	drain := make([]byte, 1<<20)
	now := s.pub.nextDue
	b.ResetTimer()
	for range b.N {
		now += int64(50 * time.Microsecond)
		l.publishDue(now)
		if _, err := unix.Read(peer, drain); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*50), "ns/msg")
}
