package codec_test

import (
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mqblast/mqblast/codec"
	"github.com/mqblast/mqblast/codec/codectest"
)

// diffIterations is the number of random packets per version and direction: enough to draw
// every packet type and property many times, fast enough for every test run.
const diffIterations = 600

// TestGeneratedRoundTrip checks the generator and the codec against themselves: every random
// packet validates, encodes to SizeX bytes and decodes back equal.
func TestGeneratedRoundTrip(t *testing.T) {
	t.Parallel()
	for _, v := range []codec.Version{codec.V311, codec.V5} {
		g := &gen{r: rand.New(rand.NewPCG(1, uint64(v))), v: v}
		for i := range diffIterations {
			ty := genTypes[i%len(genTypes)]
			if ty == codec.TypeAuth && v != codec.V5 {
				continue
			}
			p := g.packet(ty)
			if err := validate(ty, p, v); err != nil {
				t.Fatalf("%v %v #%d: Validate: %v\n%+v", v, ty, i, err, p)
			}
			wire := codectest.Encode(nil, ty, p, v)
			if size := encodedSize(t, ty, p, v); size != len(wire) {
				t.Fatalf("%v %v #%d: size %d, encoded %d", v, ty, i, size, len(wire))
			}
			d, n, err := codectest.Decode(wire, v, 0)
			if err != nil || n != len(wire) {
				t.Fatalf("%v %v #%d: decode n=%d err=%v", v, ty, i, n, err)
			}
			if diff := cmp.Diff(p, d.Packet, equateEmpty); diff != "" {
				t.Fatalf("%v %v #%d (-sent +decoded):\n%s", v, ty, i, diff)
			}
		}
	}
}
