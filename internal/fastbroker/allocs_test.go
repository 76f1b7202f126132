//go:build !race

package fastbroker

import "testing"

func TestProcessAllocs(t *testing.T) {
	for _, v := range versions {
		t.Run(v.String(), func(t *testing.T) {
			c := connectedConn(t, v)
			in := mixedPublishes(v)
			allocs := testing.AllocsPerRun(100, func() {
				c.out = c.out[:0]
				if used, _, err := c.process(in); err != nil || used != len(in) {
					t.Fatalf("process: used %d of %d: %v", used, len(in), err)
				}
			})
			if allocs != 0 {
				t.Errorf("process allocates %v times per read, want 0", allocs)
			}
		})
	}
}

func TestAppendBatchAllocs(t *testing.T) {
	for _, v := range versions {
		for _, payload := range []func(uint32, []byte) []byte{nil, stamp} {
			name := v.String() + "/callback"
			if payload == nil {
				name = v.String() + "/fixed"
			}
			t.Run(name, func(t *testing.T) {
				st := newStream(v, []byte("bench/x"), payload)
				buf := make([]byte, 0, 2*batchBytes)
				allocs := testing.AllocsPerRun(100, func() {
					var n int
					if buf, n = st.appendBatch(buf[:0], 1<<30); n == 0 || len(buf) < batchBytes {
						t.Fatalf("batch of %d messages, %d bytes", n, len(buf))
					}
				})
				if allocs != 0 {
					t.Errorf("appendBatch allocates %v times per batch, want 0", allocs)
				}
			})
		}
	}
}
