package codec_test

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mqblast/mqblast/codec"
	"github.com/mqblast/mqblast/codec/codectest"
)

// equateEmpty compares byte slices with bytes.Equal (fast on multi-megabyte payloads, and nil
// equals empty: a decoded empty payload is body[n:n], a literal one is nil) and treats other
// nil and empty slices alike.
var equateEmpty = cmp.Options{
	cmp.Comparer(bytes.Equal),
	cmp.FilterValues(func(x, y any) bool { return emptyNonBytes(x) && emptyNonBytes(y) }, cmp.Ignore()),
}

func emptyNonBytes(x any) bool {
	v := reflect.ValueOf(x)
	return v.Kind() == reflect.Slice && v.Len() == 0 && v.Type() != reflect.TypeFor[[]byte]()
}

// vector returns the golden vector with the given id.
func vector(t testing.TB, id codectest.ID) *codectest.Vector {
	t.Helper()
	for i := range codectest.Vectors {
		if codectest.Vectors[i].ID == id {
			return &codectest.Vectors[i]
		}
	}
	t.Fatalf("no vector %d", id)
	return nil
}

func TestVectorsUnique(t *testing.T) {
	t.Parallel()
	ids := map[codectest.ID]bool{}
	names := map[string]bool{}
	for _, v := range codectest.Vectors {
		if ids[v.ID] || names[v.Name] {
			t.Errorf("vector %d %q: duplicate id or name", v.ID, v.Name)
		}
		ids[v.ID], names[v.Name] = true, true
		if (v.Err == nil) == (v.Packet == nil) {
			t.Errorf("vector %q: exactly one of Packet and Err must be set", v.Name)
		}
	}
}

func TestVectorsEncode(t *testing.T) {
	t.Parallel()
	for _, v := range codectest.Vectors {
		if v.Err != nil || v.DecodeOnly {
			continue
		}
		t.Run(v.Name, func(t *testing.T) {
			got := codectest.Encode(nil, v.Type(), v.Packet, v.Version)
			if !bytes.Equal(got, v.Raw) {
				t.Fatalf("encode:\n got % x\nwant % x", head(got), head(v.Raw))
			}
			if size := encodedSize(t, v.Type(), v.Packet, v.Version); size != len(v.Raw) {
				t.Errorf("Size* = %d, want %d", size, len(v.Raw))
			}
			// Appending must keep what dst already holds.
			prefix := []byte("prefix")
			got = codectest.Encode(prefix, v.Type(), v.Packet, v.Version)
			if !bytes.Equal(got[:6], prefix) || !bytes.Equal(got[6:], v.Raw) {
				t.Fatalf("encode after a prefix differs")
			}
		})
	}
}

func TestVectorsDecode(t *testing.T) {
	t.Parallel()
	for _, v := range codectest.Vectors {
		t.Run(v.Name, func(t *testing.T) {
			d, n, err := codectest.Decode(v.Raw, v.Version, v.MaxSize)
			if v.Err != nil {
				if !errors.Is(err, v.Err) {
					t.Fatalf("err = %v, want %v", err, v.Err)
				}
				if n != 0 && n != len(v.Raw) {
					t.Fatalf("remaining length covers %d of %d bytes", n, len(v.Raw))
				}
				var ce *codec.Error
				if !errors.As(err, &ce) || ce.Code < 0x80 {
					t.Fatalf("err %v carries no failure reason code", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if n != len(v.Raw) {
				t.Fatalf("n = %d, want %d", n, len(v.Raw))
			}
			if d.Version != v.Version {
				t.Errorf("version = %v, want %v", d.Version, v.Version)
			}
			if diff := cmp.Diff(v.Packet, d.Packet, equateEmpty); diff != "" {
				t.Fatalf("decode (-want +got):\n%s", diff)
			}
		})
	}
}

// TestVectorsDecodeReused decodes every valid vector into one set of structs, in table order
// and then in reverse, so that a field left over from the previous packet shows up.
func TestVectorsDecodeReused(t *testing.T) {
	t.Parallel()
	var s structs
	order := make([]int, 0, 2*len(codectest.Vectors))
	for i := range codectest.Vectors {
		order = append(order, i)
	}
	for i := len(codectest.Vectors) - 1; i >= 0; i-- {
		order = append(order, i)
	}
	for _, i := range order {
		v := &codectest.Vectors[i]
		if v.Err != nil {
			continue
		}
		h, body, _, err := codec.Split(v.Raw, 0)
		if err != nil {
			t.Fatalf("%s: split: %v", v.Name, err)
		}
		got, err := s.decode(h, body, v.Version)
		if err != nil {
			t.Fatalf("%s: %v", v.Name, err)
		}
		if diff := cmp.Diff(v.Packet, got, equateEmpty); diff != "" {
			t.Fatalf("%s: reused decode (-want +got):\n%s", v.Name, diff)
		}
	}
}

func TestVectorsValidate(t *testing.T) {
	t.Parallel()
	for _, v := range codectest.Vectors {
		if v.Err != nil {
			continue
		}
		if err := validate(v.Type(), v.Packet, v.Version); err != nil {
			t.Errorf("%s: Validate: %v", v.Name, err)
		}
	}
}

// TestVectorsSplit feeds each valid vector to Split one byte at a time (every proper prefix
// must ask for more) and cut at every offset, as two reads would deliver it. Vectors over 64 KiB
// are cut at every offset of their first and last 4 KiB and every 4093rd byte between, which
// keeps the test fast and still crosses every header boundary.
func TestVectorsSplit(t *testing.T) {
	t.Parallel()
	for _, v := range codectest.Vectors {
		if v.Err != nil {
			continue
		}
		t.Run(v.Name, func(t *testing.T) {
			t.Parallel()
			raw := v.Raw
			for i := 0; i < len(raw); i++ {
				_, _, n, err := codec.Split(raw[:i], v.MaxSize)
				if n != 0 || err != nil {
					t.Fatalf("prefix %d of %d: n=%d err=%v, want need-more", i, len(raw), n, err)
				}
			}
			_, body, n, err := codec.Split(raw, v.MaxSize)
			if err != nil || n != len(raw) {
				t.Fatalf("whole: n=%d err=%v", n, err)
			}
			if len(body) > 0 && &body[0] != &raw[len(raw)-len(body)] {
				t.Fatalf("body does not alias the input")
			}
			// Two packets back to back, cut anywhere: a stream reader must get both.
			two := append(append([]byte{}, raw...), raw...)
			for i := 0; i <= len(two); i++ {
				if !cut(len(two), i) {
					continue
				}
				got := feed(t, [][]byte{two[:i], two[i:]}, v.MaxSize)
				if len(got) != 2 || !bytes.Equal(got[0], raw) || !bytes.Equal(got[1], raw) {
					t.Fatalf("cut at %d: got %d packets", i, len(got))
				}
			}
		})
	}
}

func cut(size, i int) bool {
	if size <= 64<<10 {
		return true
	}
	return i < 16 || i > size-16 || (i > size/2-16 && i < size/2+16) || i%65521 == 0
}

// feed plays a reader that receives chunks, appends them to its buffer, splits every complete
// packet off the front and keeps the rest, like the reactor does with gnet's buffer. It returns
// the whole packets (header and body) it saw.
func feed(t *testing.T, chunks [][]byte, maxSize int) [][]byte {
	t.Helper()
	var buf []byte
	var out [][]byte
	for _, c := range chunks {
		buf = append(buf, c...)
		used := 0
		for {
			_, _, n, err := codec.Split(buf[used:], maxSize)
			if err != nil {
				t.Fatalf("split: %v", err)
			}
			if n == 0 {
				break
			}
			if n > len(buf)-used {
				t.Fatalf("n = %d > %d buffered", n, len(buf)-used)
			}
			out = append(out, buf[used:used+n])
			used += n
		}
		buf = append([]byte{}, buf[used:]...)
	}
	if len(buf) != 0 {
		t.Fatalf("%d bytes left over", len(buf))
	}
	return out
}

func TestSplitHugeHeader(t *testing.T) {
	t.Parallel()
	h, _, n, err := codec.Split(codectest.HugeHeader, 0)
	if n != 0 || err != nil || h != (codec.Header{}) {
		t.Fatalf("header of 268435455: n=%d err=%v, want need-more", n, err)
	}
	buf := append(append([]byte{}, codectest.HugeHeader...), make([]byte, 1000)...)
	if _, _, n, err = codec.Split(buf, 0); n != 0 || err != nil {
		t.Fatalf("partial body: n=%d err=%v, want need-more", n, err)
	}
	// The whole packet is 5 header bytes and 268435455 body bytes.
	if _, _, n, err = codec.Split(codectest.HugeHeader, codec.MaxRemainingLength+5); n != 0 || err != nil {
		t.Fatalf("limit equal to the packet size: n=%d err=%v", n, err)
	}
	if _, _, _, err = codec.Split(codectest.HugeHeader, codec.MaxRemainingLength+4); !errors.Is(err, codec.ErrPacketTooLarge) {
		t.Fatalf("one byte over: err=%v", err)
	}
	// Every fixed header length is rejected against a small limit once complete, and not before.
	for _, hdr := range [][]byte{{0x30, 0x7f}, {0x30, 0x80, 0x01}, {0x30, 0xff, 0x7f}, {0x30, 0x80, 0x80, 0x01},
		{0x30, 0xff, 0xff, 0x7f}, {0x30, 0x80, 0x80, 0x80, 0x01}} {
		for i := 1; i < len(hdr); i++ {
			if _, _, n, err := codec.Split(hdr[:i], 10); n != 0 || err != nil {
				t.Fatalf("% x prefix %d: n=%d err=%v", hdr, i, n, err)
			}
		}
		if _, _, _, err := codec.Split(hdr, 10); !errors.Is(err, codec.ErrPacketTooLarge) {
			t.Fatalf("% x: err=%v, want too large", hdr, err)
		}
	}
}

// head shortens a long byte slice for a failure message.
func head(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}

func encodedSize(t *testing.T, ty codec.PacketType, p any, v codec.Version) int {
	t.Helper()
	switch ty {
	case codec.TypeConnect:
		return codec.SizeConnect(p.(*codec.Connect), v)
	case codec.TypeConnack:
		return codec.SizeConnack(p.(*codec.Connack), v)
	case codec.TypePublish:
		return codec.SizePublish(p.(*codec.Publish), v)
	case codec.TypePuback, codec.TypePubrec, codec.TypePubrel, codec.TypePubcomp:
		return codec.SizeAck(p.(*codec.Ack), v)
	case codec.TypeSubscribe:
		return codec.SizeSubscribe(p.(*codec.Subscribe), v)
	case codec.TypeSuback:
		return codec.SizeSuback(p.(*codec.Suback), v)
	case codec.TypeUnsubscribe:
		return codec.SizeUnsubscribe(p.(*codec.Unsubscribe), v)
	case codec.TypeUnsuback:
		return codec.SizeUnsuback(p.(*codec.Unsuback), v)
	case codec.TypePingreq, codec.TypePingresp:
		return codec.SizePing
	case codec.TypeDisconnect:
		return codec.SizeDisconnect(p.(*codec.Disconnect), v)
	case codec.TypeAuth:
		return codec.SizeAuth(p.(*codec.Auth))
	}
	t.Fatalf("unknown type %v", ty)
	return 0
}

func validate(ty codec.PacketType, p any, v codec.Version) error {
	switch ty {
	case codec.TypeConnect:
		return p.(*codec.Connect).Validate(v)
	case codec.TypeConnack:
		return p.(*codec.Connack).Validate(v)
	case codec.TypePublish:
		return p.(*codec.Publish).Validate(v)
	case codec.TypePuback, codec.TypePubrec, codec.TypePubrel, codec.TypePubcomp:
		return p.(*codec.Ack).Validate(ty, v)
	case codec.TypeSubscribe:
		return p.(*codec.Subscribe).Validate(v)
	case codec.TypeSuback:
		return p.(*codec.Suback).Validate(v)
	case codec.TypeUnsubscribe:
		return p.(*codec.Unsubscribe).Validate(v)
	case codec.TypeUnsuback:
		return p.(*codec.Unsuback).Validate(v)
	case codec.TypeDisconnect:
		return p.(*codec.Disconnect).Validate(v)
	case codec.TypeAuth:
		return p.(*codec.Auth).Validate()
	}
	return nil
}

// structs is one reusable struct per packet type, as a connection keeps them.
type structs struct {
	connect     codec.Connect
	connack     codec.Connack
	publish     codec.Publish
	ack         codec.Ack
	subscribe   codec.Subscribe
	suback      codec.Suback
	unsubscribe codec.Unsubscribe
	unsuback    codec.Unsuback
	disconnect  codec.Disconnect
	auth        codec.Auth
}

func (s *structs) decode(h codec.Header, body []byte, v codec.Version) (any, error) {
	switch h.Type {
	case codec.TypeConnect:
		_, err := codec.DecodeConnect(body, &s.connect)
		return &s.connect, err
	case codec.TypeConnack:
		return &s.connack, codec.DecodeConnack(body, v, &s.connack)
	case codec.TypePublish:
		return &s.publish, codec.DecodePublish(h, body, v, &s.publish)
	case codec.TypePuback:
		return &s.ack, codec.DecodePuback(body, v, &s.ack)
	case codec.TypePubrec:
		return &s.ack, codec.DecodePubrec(body, v, &s.ack)
	case codec.TypePubrel:
		return &s.ack, codec.DecodePubrel(body, v, &s.ack)
	case codec.TypePubcomp:
		return &s.ack, codec.DecodePubcomp(body, v, &s.ack)
	case codec.TypeSubscribe:
		return &s.subscribe, codec.DecodeSubscribe(body, v, &s.subscribe)
	case codec.TypeSuback:
		return &s.suback, codec.DecodeSuback(body, v, &s.suback)
	case codec.TypeUnsubscribe:
		return &s.unsubscribe, codec.DecodeUnsubscribe(body, v, &s.unsubscribe)
	case codec.TypeUnsuback:
		return &s.unsuback, codec.DecodeUnsuback(body, v, &s.unsuback)
	case codec.TypePingreq:
		return codectest.Ping{}, codec.DecodePingreq(body)
	case codec.TypePingresp:
		return codectest.Ping{}, codec.DecodePingresp(body)
	case codec.TypeDisconnect:
		return &s.disconnect, codec.DecodeDisconnect(body, v, &s.disconnect)
	case codec.TypeAuth:
		return &s.auth, codec.DecodeAuth(body, v, &s.auth)
	}
	return nil, codec.ErrReservedType
}
