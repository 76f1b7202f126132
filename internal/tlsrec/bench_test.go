package tlsrec

import (
	"strconv"
	"testing"
)

var benchSizes = []int{64, 512, 16 << 10}

// BenchmarkSeal seals one message of each size into a reused buffer.
func BenchmarkSeal(b *testing.B) {
	for _, s := range suites {
		for _, size := range benchSizes {
			b.Run(s.name+"/"+strconv.Itoa(size), func(b *testing.B) {
				c, _ := twins(b, s.id)
				plain := make([]byte, size)
				buf := c.Seal(nil, plain)
				b.SetBytes(int64(size))
				b.ReportAllocs()
				for b.Loop() {
					buf = c.Seal(buf[:0], plain)
				}
			})
		}
	}
}

// BenchmarkOpen opens records sealed in advance (a ring of them, as the sequence
// number must advance), appending to a reused buffer.
func BenchmarkOpen(b *testing.B) {
	for _, s := range suites {
		for _, size := range benchSizes {
			b.Run(s.name+"/"+strconv.Itoa(size), func(b *testing.B) {
				const ring = 1024
				plain := make([]byte, size)
				var recs [][]byte
				var c *Conn
				out := make([]byte, 0, size)
				i := ring
				b.SetBytes(int64(size))
				b.ReportAllocs()
				for b.Loop() {
					if i == ring { // a fresh pair and ring, outside the timing
						b.StopTimer()
						var a *Conn
						a, c = twins(b, s.id)
						recs = recs[:0]
						for range ring {
							recs = append(recs, a.Seal(nil, plain))
						}
						c.state()
						i = 0
						b.StartTimer()
					}
					var err error
					if out, _, err = c.Open(out[:0], recs[i]); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		}
	}
}

// BenchmarkRebuild is what waking an idle Conn costs: its cipher state built again
// from the keys kept.
func BenchmarkRebuild(b *testing.B) {
	for _, s := range suites {
		b.Run(s.name, func(b *testing.B) {
			c, _ := twins(b, s.id)
			b.ReportAllocs()
			for b.Loop() {
				c.Release()
				c.state()
			}
		})
	}
}
