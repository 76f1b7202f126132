//go:build !race

package codec_test

import (
	"testing"

	"github.com/mqblast/mqblast/codec"
	"github.com/mqblast/mqblast/codec/codectest"
)

// TestAllocs asserts that the hot-path encoders and decoders allocate nothing once the
// caller's buffers and structs exist (the allocation guards of CONTRIBUTING.md).
func TestAllocs(t *testing.T) {
	cases := []codectest.ID{
		codectest.IDPublish311QoS1, codectest.IDPublish5TwoProps, codectest.IDPublish5AllProps,
		codectest.IDPuback311, codectest.IDPuback5Props, codectest.IDPubrel5NotFound,
		codectest.IDConnack311Accepted, codectest.IDConnack5Full,
		codectest.IDSuback311, codectest.IDSuback5,
		codectest.IDPingresp311, codectest.IDPingreq5,
		codectest.IDSubscribe5, codectest.IDDisconnect5Props, codectest.IDConnect5Full,
	}
	for _, id := range cases {
		v := vector(t, id)
		t.Run(v.Name, func(t *testing.T) {
			dst := make([]byte, 0, 1024)
			var s structs
			h, body, _, _ := codec.Split(v.Raw, 0)
			if _, err := s.decode(h, body, v.Version); err != nil { // grows the reusable slices once
				t.Fatal(err)
			}
			if n := testing.AllocsPerRun(100, func() {
				dst = codectest.Encode(dst[:0], v.Type(), v.Packet, v.Version)
			}); n != 0 {
				t.Errorf("encode: %v allocs", n)
			}
			if n := testing.AllocsPerRun(100, func() {
				h, body, _, _ := codec.Split(v.Raw, 0)
				_, _ = s.decode(h, body, v.Version)
			}); n != 0 {
				t.Errorf("split+decode: %v allocs", n)
			}
		})
	}
}

// TestAllocsHotPath calls the functions the reactor calls directly, without the dispatching
// helpers, so that no interface conversion hides or causes an allocation.
func TestAllocsHotPath(t *testing.T) {
	dst := make([]byte, 0, 256)
	pub := codec.Publish{QoS: 1, Topic: []byte("a/b"), ID: 7, Payload: make([]byte, 16)}
	pub5 := codec.Publish{QoS: 1, Topic: []byte("a/b"), ID: 7, Payload: make([]byte, 16),
		Props: codec.Properties{Present: codec.Mask(codec.PropMessageExpiry, codec.PropTopicAlias),
			MessageExpiry: 60, TopicAlias: 3}}
	ack := codec.Ack{ID: 7}
	connack := codec.Connack{SessionPresent: true}
	suback := codec.Suback{ID: 1, Reasons: []codec.ReasonCode{1}}
	var gotPub codec.Publish
	var gotAck codec.Ack
	var gotConnack codec.Connack
	var gotSuback codec.Suback
	for _, v := range []codec.Version{codec.V311, codec.V5} {
		check := func(name string, f func()) {
			t.Helper()
			f()
			if n := testing.AllocsPerRun(200, f); n != 0 {
				t.Errorf("%s %v: %v allocs", name, v, n)
			}
		}
		wirePub := codec.AppendPublish(nil, &pub, v)
		wirePub5 := codec.AppendPublish(nil, &pub5, codec.V5)
		wireAck := codec.AppendPuback(nil, &ack, v)
		wireConnack := codec.AppendConnack(nil, &connack, v)
		wireSuback := codec.AppendSuback(nil, &suback, v)
		wirePing := codec.AppendPingresp(nil)
		check("AppendPublish", func() { dst = codec.AppendPublish(dst[:0], &pub, v) })
		check("AppendPublish/props", func() { dst = codec.AppendPublish(dst[:0], &pub5, codec.V5) })
		check("AppendPuback", func() { dst = codec.AppendPuback(dst[:0], &ack, v) })
		check("AppendConnack", func() { dst = codec.AppendConnack(dst[:0], &connack, v) })
		check("AppendSuback", func() { dst = codec.AppendSuback(dst[:0], &suback, v) })
		check("AppendPingresp", func() { dst = codec.AppendPingresp(dst[:0]) })
		check("DecodePublish", func() {
			h, body, _, _ := codec.Split(wirePub, 0)
			_ = codec.DecodePublish(h, body, v, &gotPub)
		})
		check("DecodePublish/props", func() {
			h, body, _, _ := codec.Split(wirePub5, 0)
			_ = codec.DecodePublish(h, body, codec.V5, &gotPub)
		})
		check("DecodePuback", func() {
			_, body, _, _ := codec.Split(wireAck, 0)
			_ = codec.DecodePuback(body, v, &gotAck)
		})
		check("DecodeConnack", func() {
			_, body, _, _ := codec.Split(wireConnack, 0)
			_ = codec.DecodeConnack(body, v, &gotConnack)
		})
		check("DecodeSuback", func() {
			_, body, _, _ := codec.Split(wireSuback, 0)
			_ = codec.DecodeSuback(body, v, &gotSuback)
		})
		check("DecodePingresp", func() {
			_, body, _, _ := codec.Split(wirePing, 0)
			_ = codec.DecodePingresp(body)
		})
	}
}
