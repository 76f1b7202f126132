//go:build !race

package codec_test

import (
	"testing"

	"github.com/mqblast/mqblast/codec"
	"github.com/mqblast/mqblast/codec/codectest"
)

// TestAllocsUserPropsIteration: reading decoded user properties and subscription identifiers
// allocates nothing.
func TestAllocsUserPropsIteration(t *testing.T) {
	v := vector(t, codectest.IDPublish5AllProps)
	h, body, _, _ := codec.Split(v.Raw, 0)
	var p codec.Publish
	if err := codec.DecodePublish(h, body, codec.V5, &p); err != nil {
		t.Fatal(err)
	}
	n := 0
	if a := testing.AllocsPerRun(100, func() {
		for k, v := range p.Props.User.All() {
			n += len(k) + len(v)
		}
		for id := range p.Props.SubIDs.All() {
			n += int(id)
		}
	}); a != 0 {
		t.Fatalf("%v allocs", a)
	}
}
