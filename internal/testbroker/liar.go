package testbroker

import (
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mqblast/mqblast/codec"
	"github.com/mqblast/mqblast/reactor"
)

// Liar is a scripted MQTT 3.1.1 server for the paths where a broker misbehaves: it
// accepts every client and subscription, acknowledges every PUBLISH (QoS 1 and 2) and
// delivers none of them; instead, after each SUBACK it sends Strays messages in mqblast's
// format from a publisher number no plan has, on the subscribed topic, After the SUBACK
// and once a PUBLISH has come: the strays carry the run tag of the first PUBLISH, so that
// they are the run's own messages, of a publisher it does not have.
type Liar struct {
	Addr   string
	Acked  atomic.Int64 // PUBLISH packets acknowledged (and dropped)
	Strays int          // stray messages per subscription
	After  time.Duration
	run    atomic.Uint32 // 1<<16 | the run tag of the first PUBLISH (0: none yet)
}

// StartLiar starts a Liar on a free loopback port; it stops with the test.
func StartLiar(t testing.TB, strays int, after time.Duration) *Liar {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	l := &Liar{Addr: ln.Addr().String(), Strays: strays, After: after}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go l.serve(c)
		}
	}()
	return l
}

func (l *Liar) serve(c net.Conn) {
	defer c.Close()   //nolint:errcheck
	var mu sync.Mutex // writes come from the packet loop and from the strays' timer
	write := func(b []byte) error {
		mu.Lock()
		defer mu.Unlock()
		_, err := c.Write(b)
		return err
	}
	v := codec.V311
	servePackets(c, write, func(h codec.Header, body, out []byte) ([]byte, bool) {
		switch h.Type {
		case codec.TypeConnect:
			out = codec.AppendConnack(out, &codec.Connack{}, v)
		case codec.TypeSubscribe:
			var s codec.Subscribe
			if codec.DecodeSubscribe(body, v, &s) != nil {
				return out, false
			}
			codes := make([]codec.ReasonCode, len(s.Filters))
			for i, f := range s.Filters {
				codes[i] = codec.ReasonCode(f.QoS)
			}
			out = codec.AppendSuback(out, &codec.Suback{ID: s.ID, Reasons: codes}, v)
			topic := strings.NewReplacer("#", "stray", "+", "stray").Replace(string(s.Filters[0].Filter))
			if strings.HasPrefix(topic, "$share/") {
				_, topic, _ = strings.Cut(topic[len("$share/"):], "/")
			}
			time.AfterFunc(l.After, func() {
				for wait := time.Now().Add(10 * time.Second); l.run.Load() == 0 && time.Now().Before(wait); {
					time.Sleep(10 * time.Millisecond)
				}
				var b []byte
				for k := range l.Strays {
					pl := make([]byte, reactor.HeaderSize)
					reactor.PutHeader(pl, time.Now().UnixNano(), uint16(l.run.Load()), 1<<20, uint32(k))
					b = codec.AppendPublish(b, &codec.Publish{Topic: []byte(topic), Payload: pl}, v)
				}
				_ = write(b)
			})
		case codec.TypePublish:
			var p codec.Publish
			if codec.DecodePublish(h, body, v, &p) != nil {
				return out, false
			}
			l.Acked.Add(1)
			if tag, _, _, ok := reactor.ReadHeader(p.Payload); ok {
				l.run.CompareAndSwap(0, 1<<16|uint32(tag))
			}
			switch p.QoS {
			case 1:
				out = codec.AppendPuback(out, &codec.Ack{ID: p.ID}, v)
			case 2:
				out = codec.AppendPubrec(out, &codec.Ack{ID: p.ID}, v)
			}
		case codec.TypePubrel:
			var a codec.Ack
			if codec.DecodePubrel(body, v, &a) != nil {
				return out, false
			}
			out = codec.AppendPubcomp(out, &codec.Ack{ID: a.ID}, v)
		case codec.TypePingreq:
			out = codec.AppendPingresp(out)
		case codec.TypeDisconnect:
			return out, false
		}
		return out, true
	})
}

// servePackets reads c's MQTT packets and hands each to handle, which appends its replies
// to out and returns false to end the connection; what one read brought is answered in one
// write. It returns when c fails, a packet is malformed or handle ends it (its replies
// written), or after five minutes.
func servePackets(c net.Conn, write func([]byte) error, handle func(h codec.Header, body, out []byte) ([]byte, bool)) {
	_ = c.SetDeadline(time.Now().Add(5 * time.Minute))
	var buf, out []byte
	tmp := make([]byte, 64<<10)
	for {
		n, err := c.Read(tmp)
		if err != nil {
			return
		}
		buf = append(buf, tmp[:n]...)
		out = out[:0]
		for {
			h, body, used, err := codec.Split(buf, 1<<24)
			if err != nil {
				return
			}
			if used == 0 {
				break
			}
			var more bool
			if out, more = handle(h, body, out); !more {
				_ = write(out)
				return
			}
			buf = buf[used:]
		}
		if len(out) > 0 && write(out) != nil {
			return
		}
	}
}
