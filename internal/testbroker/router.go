package testbroker

import (
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mqblast/mqblast/codec"
	"github.com/mqblast/mqblast/reactor"
)

// Router is a scripted MQTT broker for runs whose figures must come out exact: it routes
// each PUBLISH in mqblast's format to the clients subscribed with a matching filter (topic
// levels, '+' and '#'; a "$share/<group>/" filter's subscribers are the group's members),
// but acknowledges a message only when Ack says so (one it does not acknowledge stays in
// flight at its publisher and fills its window) and delivers it only to the subscribers
// To chooses. Both decide by the publisher and sequence numbers of the payload's header,
// never by timing or by the order clients connected in, so the run's received, lost,
// in-flight and duplicated copies follow from them whichever processes its clients run in.
// It keeps no sessions beyond a connection and delivers at QoS 1 (acknowledgements
// ignored); it speaks the MQTT version each client connects with.
type Router struct {
	Addr string
	// Ack reports whether to acknowledge message seq of publisher pub.
	Ack func(pub, seq uint32) bool
	// To returns the receivers of message seq of publisher pub among subs, the client ids
	// subscribed with filter, sorted (for a share group's filter, its members).
	To func(filter string, subs []string, pub, seq uint32) []string

	mu    sync.Mutex
	subs  map[string][]string // filter -> client ids, sorted
	conns map[string]*routed  // client id -> its connection
}

// routed is one client's connection: writes come from every publisher's connection.
type routed struct {
	mu  sync.Mutex
	c   net.Conn
	v   codec.Version
	pid uint16
}

func (rc *routed) write(b []byte) error {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	_, err := rc.c.Write(b)
	return err
}

// StartRouter starts a Router on a free loopback port; it stops with the test.
func StartRouter(t testing.TB, ack func(pub, seq uint32) bool, to func(filter string, subs []string, pub, seq uint32) []string) *Router {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &Router{Addr: ln.Addr().String(), Ack: ack, To: to, subs: map[string][]string{}, conns: map[string]*routed{}}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		_ = ln.Close()
		r.mu.Lock()
		for _, rc := range r.conns {
			_ = rc.c.Close()
		}
		r.mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { r.serve(c) })
		}
	})
	return r
}

func (r *Router) serve(c net.Conn) {
	defer c.Close() //nolint:errcheck
	rc := &routed{c: c, v: codec.V311}
	id := ""
	defer func() {
		r.mu.Lock()
		if r.conns[id] == rc {
			delete(r.conns, id)
		}
		r.mu.Unlock()
	}()
	servePackets(c, rc.write, func(h codec.Header, body, out []byte) ([]byte, bool) {
		switch h.Type {
		case codec.TypeConnect:
			var cn codec.Connect
			v, err := codec.DecodeConnect(body, &cn)
			if err != nil {
				return out, false
			}
			rc.v, id = v, string(cn.ClientID)
			r.mu.Lock()
			r.conns[id] = rc
			r.mu.Unlock()
			out = codec.AppendConnack(out, &codec.Connack{}, rc.v)
		case codec.TypeSubscribe:
			var s codec.Subscribe
			if codec.DecodeSubscribe(body, rc.v, &s) != nil {
				return out, false
			}
			codes := make([]codec.ReasonCode, len(s.Filters))
			r.mu.Lock()
			for i, f := range s.Filters {
				codes[i] = codec.ReasonCode(min(f.QoS, 1))
				ids := r.subs[string(f.Filter)]
				if k, found := slices.BinarySearch(ids, id); !found {
					r.subs[string(f.Filter)] = slices.Insert(ids, k, id)
				}
			}
			r.mu.Unlock()
			out = codec.AppendSuback(out, &codec.Suback{ID: s.ID, Reasons: codes}, rc.v)
		case codec.TypePublish:
			var p codec.Publish
			if codec.DecodePublish(h, body, rc.v, &p) != nil {
				return out, false
			}
			_, pub, seq, ok := reactor.ReadHeader(p.Payload)
			switch {
			case ok && !r.Ack(pub, seq): // left in flight
			case p.QoS == 1:
				out = codec.AppendPuback(out, &codec.Ack{ID: p.ID}, rc.v)
			case p.QoS == 2:
				out = codec.AppendPubrec(out, &codec.Ack{ID: p.ID}, rc.v)
			}
			if ok {
				r.route(&p, pub, seq)
			}
		case codec.TypePubrel:
			var a codec.Ack
			if codec.DecodePubrel(body, rc.v, &a) != nil {
				return out, false
			}
			out = codec.AppendPubcomp(out, &codec.Ack{ID: a.ID}, rc.v)
		case codec.TypePingreq:
			out = codec.AppendPingresp(out)
		case codec.TypeDisconnect:
			return out, false
		}
		return out, true
	})
}

// route delivers message seq of publisher pub, published as p, to the subscribers To
// chooses (also when Ack kept it in flight: a broker may deliver before it acknowledges).
func (r *Router) route(p *codec.Publish, pub, seq uint32) {
	var to []*routed
	r.mu.Lock()
	for _, f := range slices.Sorted(maps.Keys(r.subs)) {
		if !matches(f, string(p.Topic)) {
			continue
		}
		for _, id := range r.To(f, r.subs[f], pub, seq) {
			if rc := r.conns[id]; rc != nil {
				to = append(to, rc)
			}
		}
	}
	r.mu.Unlock()
	for _, rc := range to {
		rc.mu.Lock()
		rc.pid++
		if rc.pid == 0 {
			rc.pid = 1
		}
		b := codec.AppendPublish(nil, &codec.Publish{Topic: p.Topic, QoS: 1, ID: rc.pid, Payload: p.Payload}, rc.v)
		_, _ = rc.c.Write(b)
		rc.mu.Unlock()
	}
}

// matches reports whether filter (possibly a "$share/<group>/" one) matches topic.
func matches(filter, topic string) bool {
	if rest, ok := strings.CutPrefix(filter, "$share/"); ok {
		_, filter, _ = strings.Cut(rest, "/")
	}
	f, tp := strings.Split(filter, "/"), strings.Split(topic, "/")
	for i, lv := range f {
		switch {
		case lv == "#":
			return true
		case i >= len(tp) || lv != "+" && lv != tp[i]:
			return false
		}
	}
	return len(f) == len(tp)
}
