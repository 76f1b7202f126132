package fastbroker_test

import (
	"encoding/binary"
	"fmt"
	"net"

	"github.com/mqblast/mqblast/codec"
	"github.com/mqblast/mqblast/internal/fastbroker"
)

// A subscriber gets its SUBACK and then the stream, each payload stamped by the callback.
func ExampleStart() {
	s, err := fastbroker.Start("127.0.0.1:0", fastbroker.Options{
		Stream:      true,
		StreamCount: 3,
		Payload: func(seq uint32, dst []byte) []byte {
			return binary.BigEndian.AppendUint32(dst, seq)
		},
	})
	if err != nil {
		panic(err)
	}
	defer s.Close()
	nc, err := net.Dial("tcp", s.Addr())
	if err != nil {
		panic(err)
	}
	defer nc.Close()
	out := codec.AppendConnect(nil, &codec.Connect{ClientID: []byte("sub"), CleanStart: true}, codec.V311)
	out = codec.AppendSubscribe(out, &codec.Subscribe{ID: 1, Filters: []codec.Subscription{{Filter: []byte("bench/#")}}}, codec.V311)
	if _, err := nc.Write(out); err != nil {
		panic(err)
	}
	var in []byte
	buf := make([]byte, 4096)
	var pub codec.Publish
	for seen := 0; seen < 5; {
		n, err := nc.Read(buf)
		if err != nil {
			panic(err)
		}
		in = append(in, buf[:n]...)
		for {
			h, body, n, err := codec.Split(in, 0)
			if err != nil {
				panic(err)
			}
			if n == 0 {
				break
			}
			if h.Type == codec.TypePublish {
				if err := codec.DecodePublish(h, body, codec.V311, &pub); err != nil {
					panic(err)
				}
				fmt.Println(h.Type, string(pub.Topic), binary.BigEndian.Uint32(pub.Payload))
			} else {
				fmt.Println(h.Type)
			}
			in = in[n:]
			seen++
		}
	}
	// Output:
	// CONNACK
	// SUBACK
	// PUBLISH bench/x 0
	// PUBLISH bench/x 1
	// PUBLISH bench/x 2
}
