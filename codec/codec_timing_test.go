package codec_test

import (
	"fmt"
	"testing"

	"github.com/mqblast/mqblast/codec"
)

// Sinks keep the compiler from optimizing the benchmarked work away.
var (
	sinkBytes []byte
	sinkErr   error
)

type benchPublish struct {
	name string
	v    codec.Version
	p    codec.Publish
}

func benchPublishes() []benchPublish {
	var out []benchPublish
	for _, size := range []int{16, 256} {
		for _, qos := range []codec.QoS{0, 1} {
			p := codec.Publish{QoS: qos, Topic: []byte("test/topic/42"), Payload: make([]byte, size)}
			if qos > 0 {
				p.ID = 4242
			}
			out = append(out,
				benchPublish{fmt.Sprintf("v311/qos%d/%dB", qos, size), codec.V311, p},
				benchPublish{fmt.Sprintf("v5/qos%d/%dB", qos, size), codec.V5, p})
			p.Props = codec.Properties{Present: codec.Mask(codec.PropMessageExpiry, codec.PropTopicAlias),
				MessageExpiry: 300, TopicAlias: 12}
			out = append(out, benchPublish{fmt.Sprintf("v5-2props/qos%d/%dB", qos, size), codec.V5, p})
		}
	}
	return out
}

func BenchmarkAppendPublish(b *testing.B) {
	for _, bp := range benchPublishes() {
		b.Run(bp.name, func(b *testing.B) {
			wire := codec.AppendPublish(nil, &bp.p, bp.v)
			dst := make([]byte, 0, len(wire))
			b.ReportAllocs()
			b.SetBytes(int64(len(wire)))
			for b.Loop() {
				dst = codec.AppendPublish(dst[:0], &bp.p, bp.v)
			}
			sinkBytes = dst
		})
	}
}

// BenchmarkDecodePublish measures Split and DecodePublish together, as the reactor runs them.
func BenchmarkDecodePublish(b *testing.B) {
	for _, bp := range benchPublishes() {
		b.Run(bp.name, func(b *testing.B) {
			wire := codec.AppendPublish(nil, &bp.p, bp.v)
			var p codec.Publish
			b.ReportAllocs()
			b.SetBytes(int64(len(wire)))
			var err error
			for b.Loop() {
				h, body, _, _ := codec.Split(wire, 1<<20)
				err = codec.DecodePublish(h, body, bp.v, &p)
			}
			sinkErr = err
			sinkBytes = p.Payload
		})
	}
}

func BenchmarkAppendPuback(b *testing.B) {
	for _, v := range []codec.Version{codec.V311, codec.V5} {
		b.Run(vname(v), func(b *testing.B) {
			ack := codec.Ack{ID: 4242}
			dst := make([]byte, 0, 16)
			b.ReportAllocs()
			b.SetBytes(int64(codec.SizeAck(&ack, v)))
			for b.Loop() {
				dst = codec.AppendPuback(dst[:0], &ack, v)
			}
			sinkBytes = dst
		})
	}
}

func BenchmarkDecodePuback(b *testing.B) {
	for _, v := range []codec.Version{codec.V311, codec.V5} {
		b.Run(vname(v), func(b *testing.B) {
			wire := codec.AppendPuback(nil, &codec.Ack{ID: 4242}, v)
			var ack codec.Ack
			b.ReportAllocs()
			b.SetBytes(int64(len(wire)))
			var err error
			for b.Loop() {
				_, body, _, _ := codec.Split(wire, 1<<20)
				err = codec.DecodePuback(body, v, &ack)
			}
			sinkErr = err
		})
	}
}

func BenchmarkDecodeConnack(b *testing.B) {
	for _, v := range []codec.Version{codec.V311, codec.V5} {
		b.Run(vname(v), func(b *testing.B) {
			c := codec.Connack{}
			if v == codec.V5 {
				c.Props = codec.Properties{Present: codec.Mask(codec.PropReceiveMaximum, codec.PropTopicAliasMaximum),
					ReceiveMaximum: 100, TopicAliasMaximum: 10}
			}
			wire := codec.AppendConnack(nil, &c, v)
			var got codec.Connack
			b.ReportAllocs()
			b.SetBytes(int64(len(wire)))
			var err error
			for b.Loop() {
				_, body, _, _ := codec.Split(wire, 1<<20)
				err = codec.DecodeConnack(body, v, &got)
			}
			sinkErr = err
		})
	}
}

func BenchmarkDecodeSuback(b *testing.B) {
	for _, v := range []codec.Version{codec.V311, codec.V5} {
		b.Run(vname(v), func(b *testing.B) {
			wire := codec.AppendSuback(nil, &codec.Suback{ID: 1, Reasons: []codec.ReasonCode{1, 1, 0}}, v)
			var got codec.Suback
			b.ReportAllocs()
			b.SetBytes(int64(len(wire)))
			var err error
			for b.Loop() {
				_, body, _, _ := codec.Split(wire, 1<<20)
				err = codec.DecodeSuback(body, v, &got)
			}
			sinkErr = err
		})
	}
}

func BenchmarkAppendConnect(b *testing.B) {
	for _, v := range []codec.Version{codec.V311, codec.V5} {
		b.Run(vname(v), func(b *testing.B) {
			c := codec.Connect{ClientID: []byte("test-publisher-12345"), KeepAlive: 300, CleanStart: true}
			dst := make([]byte, 0, 64)
			b.ReportAllocs()
			b.SetBytes(int64(codec.SizeConnect(&c, v)))
			for b.Loop() {
				dst = codec.AppendConnect(dst[:0], &c, v)
			}
			sinkBytes = dst
		})
	}
}

func vname(v codec.Version) string {
	if v == codec.V5 {
		return "v5"
	}
	return "v311"
}
