package reactor

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mqblast/mqblast/internal/payloadtpl"
)

// BenchmarkPublishPass: the loop's publish pass alone, 50 QoS 0 messages of 32 bytes per
// pass over a socket pair, without a rate profile (the plan's schedule): the per-message
// cost of the schedule, encoding and the write, with none of a broker's.
func BenchmarkPublishPass(b *testing.B) {
	benchPublishPass(b, &PublishSpec{Topic: []byte("bench/x"), QoS: 0, Rate: 1e6, PayloadSize: 32, Receivers: 1})
}

// benchPublishPass measures publish passes of 50 messages of publisher sp over a socket pair.
func benchPublishPass(b *testing.B, sp *PublishSpec) {
	l, s, peer := testSession(b, 5)
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

// benchTemplate is a device's JSON reading with every kind of placeholder.
const benchTemplate = `{"device":"{{client_id}}","n":{{client_index}},"seq":{{seq}},"ts":{{unix_ms}},"at":"{{rfc3339}}",` +
	`"temp":{{rand_float 18.0 31.5}},"rpm":{{rand_int 900 3100}},"state":"{{choice idle|run|fault}}","fw":"{{rand_text 8}}","m":"{{mark}}"}`

func mustTemplate(tb testing.TB, src string) *payloadtpl.Template {
	tb.Helper()
	t, err := payloadtpl.Compile(src)
	if err != nil {
		tb.Fatal(err)
	}
	return t
}

// BenchmarkPublishPassTemplate: BenchmarkPublishPass's pass with a payload rendered from a
// JSON template of every placeholder (template) against a fixed payload of the same size
// (fixed): the rendering's cost per message, which is to stay within 1.3 × fixed.
func BenchmarkPublishPassTemplate(b *testing.B) {
	tp := mustTemplate(b, benchTemplate)
	id := []byte("mqblast-pub-17")
	size := MeasuredSize + tp.MaxLen(len(id))
	for _, c := range []struct {
		name string
		sp   PublishSpec
	}{
		{"fixed", PublishSpec{PayloadSize: size}},
		{"template", PublishSpec{PayloadSize: size, Template: tp, ClientID: id, ClientIndex: 17}},
	} {
		b.Run(c.name, func(b *testing.B) {
			sp := c.sp
			sp.Topic, sp.Rate, sp.Receivers = []byte("bench/x"), 1e6, 1
			b.ReportAllocs()
			b.SetBytes(int64(size))
			benchPublishPass(b, &sp)
		})
	}
}
