package testbroker

import (
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

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
// ignored); it speaks the MQTT version each client connects with, and grants a QoS 2
// subscription QoS 1. Its Script, if any, makes it answer as a broker that refuses, lacks
// or ends things would.
type Router struct {
	Addr   string
	Script *Script
	// Ack reports whether to acknowledge message seq of publisher pub.
	Ack func(pub, seq uint32) bool
	// To returns the receivers of message seq of publisher pub among subs, the client ids
	// subscribed with filter, sorted (for a share group's filter, its members).
	To func(filter string, subs []string, pub, seq uint32) []string

	mu    sync.Mutex
	subs  map[string][]string // filter -> client ids, sorted
	conns map[string]*routed  // client id -> its connection
	delay func(pub, seq uint32) time.Duration
}

// SetDelay makes the Router hold back the copies of message seq of publisher pub for
// delay(pub, seq) (0: none): they are written that much later, the message's other traffic
// and others' messages going on meanwhile.
func (r *Router) SetDelay(delay func(pub, seq uint32) time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.delay = delay
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

// Script makes a Router answer where a real broker cannot be made to on demand: its
// CONNACK (reason code and 5.0 properties, or bytes of its own), a SUBACK's reason code
// per filter, the reason code of the PUBACK or PUBREC of a message, and a DISCONNECT with
// its reason code and string in place of an answer. A nil function keeps the Router's
// answer. The functions are called from the connections' goroutines, concurrently.
type Script struct {
	// Connack returns the CONNACK for client id's CONNECT of version v; raw, when not nil,
	// is written instead (a 3.1.1 CONNACK to a 5.0 CONNECT, say), and the connection ends
	// when ca refuses it.
	Connack func(id string, v codec.Version) (ca codec.Connack, raw []byte)
	// Suback returns the SUBACK's reason code for filter, asked at QoS qos.
	Suback func(filter string, qos codec.QoS, v codec.Version) codec.ReasonCode
	// Puback returns the reason code of the PUBACK (QoS 1) or PUBREC (QoS 2) of message seq
	// of publisher pub; a code of 0x80 and up refuses it: it is not routed.
	Puback func(pub, seq uint32) codec.ReasonCode
	// Disconnect, when ok, ends the connection with a 5.0 DISCONNECT of code and reason
	// string (a 3.1.1 connection is closed) instead of answering the packet of type typ
	// (a SUBSCRIBE, a PUBLISH) of client id, at qos (the PUBLISH's, the highest filter's).
	Disconnect func(id string, typ codec.PacketType, qos codec.QoS) (code codec.ReasonCode, reason string, ok bool)
	// NoPubcomp leaves every PUBREL unanswered: a QoS 2 message is PUBREC'd (and routed),
	// and its PUBCOMP never comes.
	NoPubcomp bool
}

// StartRouter starts a Router on a free loopback port; it stops with the test.
func StartRouter(t testing.TB, ack func(pub, seq uint32) bool, to func(filter string, subs []string, pub, seq uint32) []string) *Router {
	t.Helper()
	return StartScripted(t, nil, ack, to)
}

// StartScripted starts a Router that answers by sc (nil: as StartRouter's) on a free
// loopback port; it stops with the test. A nil ack acknowledges every message, a nil to
// delivers to every subscriber.
func StartScripted(t testing.TB, sc *Script, ack func(pub, seq uint32) bool, to func(filter string, subs []string, pub, seq uint32) []string) *Router {
	t.Helper()
	if ack == nil {
		ack = func(uint32, uint32) bool { return true }
	}
	if to == nil {
		to = func(_ string, subs []string, _, _ uint32) []string { return subs }
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &Router{Addr: ln.Addr().String(), Script: sc, Ack: ack, To: to, subs: map[string][]string{}, conns: map[string]*routed{}}
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
	sc := r.Script
	if sc == nil {
		sc = &Script{}
	}
	// disconnect ends the connection instead of answering a packet of type typ at qos, if
	// the script says so.
	disconnect := func(out []byte, typ codec.PacketType, qos codec.QoS) ([]byte, bool) {
		if sc.Disconnect == nil {
			return out, false
		}
		code, reason, ok := sc.Disconnect(id, typ, qos)
		if !ok {
			return out, false
		}
		if rc.v == codec.V5 {
			d := codec.Disconnect{Reason: code}
			if reason != "" {
				d.Props.Set(codec.PropReasonString)
				d.Props.ReasonString = []byte(reason)
			}
			out = codec.AppendDisconnect(out, &d, rc.v)
		}
		return out, true
	}
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
			if sc.Connack == nil {
				out = codec.AppendConnack(out, &codec.Connack{}, rc.v)
				break
			}
			ca, raw := sc.Connack(id, rc.v)
			if raw != nil {
				return append(out, raw...), false
			}
			out = codec.AppendConnack(out, &ca, rc.v)
			if ca.Reason != 0 {
				return out, false
			}
		case codec.TypeSubscribe:
			var s codec.Subscribe
			if codec.DecodeSubscribe(body, rc.v, &s) != nil {
				return out, false
			}
			top := codec.QoS(0)
			for _, f := range s.Filters {
				top = max(top, f.QoS)
			}
			if o, end := disconnect(out, h.Type, top); end {
				return o, false
			}
			codes := make([]codec.ReasonCode, len(s.Filters))
			r.mu.Lock()
			for i, f := range s.Filters {
				codes[i] = codec.ReasonCode(min(f.QoS, 1))
				if sc.Suback != nil {
					codes[i] = sc.Suback(string(f.Filter), f.QoS, rc.v)
				}
				if codes[i] >= 0x80 {
					continue
				}
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
			if o, end := disconnect(out, h.Type, p.QoS); end {
				return o, false
			}
			_, pub, seq, ok := reactor.ReadHeader(p.Payload)
			reply := codec.Ack{ID: p.ID}
			if ok && sc.Puback != nil && rc.v == codec.V5 {
				reply.Reason = sc.Puback(pub, seq)
			}
			switch {
			case ok && !r.Ack(pub, seq): // left in flight
			case p.QoS == 1:
				out = codec.AppendPuback(out, &reply, rc.v)
			case p.QoS == 2:
				out = codec.AppendPubrec(out, &reply, rc.v)
			}
			if ok && reply.Reason < 0x80 {
				r.route(&p, pub, seq)
			}
		case codec.TypePubrel:
			var a codec.Ack
			if codec.DecodePubrel(body, rc.v, &a) != nil {
				return out, false
			}
			if !sc.NoPubcomp {
				out = codec.AppendPubcomp(out, &codec.Ack{ID: a.ID}, rc.v)
			}
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
	delay := r.delay
	r.mu.Unlock()
	write := func(topic, payload []byte) {
		for _, rc := range to {
			rc.mu.Lock()
			rc.pid++
			if rc.pid == 0 {
				rc.pid = 1
			}
			b := codec.AppendPublish(nil, &codec.Publish{Topic: topic, QoS: 1, ID: rc.pid, Payload: payload}, rc.v)
			_, _ = rc.c.Write(b) // a connection gone by then loses the copy
			rc.mu.Unlock()
		}
	}
	if delay != nil {
		if d := delay(pub, seq); d > 0 {
			topic, payload := slices.Clone(p.Topic), slices.Clone(p.Payload)
			time.AfterFunc(d, func() { write(topic, payload) })
			return
		}
	}
	write(p.Topic, p.Payload)
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
