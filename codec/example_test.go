package codec_test

import (
	"fmt"

	"github.com/mqblast/mqblast/codec"
)

// A reader splits every complete packet off the front of its input and keeps the rest for the
// next read.
func ExampleSplit() {
	pub := codec.Publish{QoS: 1, ID: 7, Topic: []byte("a/b"), Payload: []byte("hi")}
	if err := pub.Validate(codec.V311); err != nil {
		panic(err) // at scenario load time, not per packet
	}
	var out []byte
	out = codec.AppendPublish(out, &pub, codec.V311)
	out = codec.AppendPingreq(out)

	in := out[:len(out)-1] // the last byte has not arrived yet
	var got codec.Publish
	for used := 0; ; {
		h, body, n, err := codec.Split(in[used:], 1<<20)
		if err != nil {
			panic(err)
		}
		if n == 0 {
			fmt.Printf("%d bytes wait for more\n", len(in)-used)
			break
		}
		if h.Type == codec.TypePublish {
			if err := codec.DecodePublish(h, body, codec.V311, &got); err != nil {
				panic(err)
			}
			fmt.Printf("%v %s qos=%d id=%d %q\n", h.Type, got.Topic, got.QoS, got.ID, got.Payload)
		}
		used += n
	}
	// Output:
	// PUBLISH a/b qos=1 id=7 "hi"
	// 1 bytes wait for more
}
