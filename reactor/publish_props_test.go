package reactor

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
	"weak"

	"golang.org/x/sys/unix"

	"github.com/mqblast/mqblast/codec"
)

// TestPublishPropsInterleaved: publishers of one loop whose messages alternate each send
// their own PUBLISH: a 5.0 one with properties and the topic alias, a 5.0 one without
// either, a 3.1.1 one. The loop's scratch PUBLISH keeps the properties of the spec it was
// last filled for, so this fails if another publisher's are sent.
func TestPublishPropsInterleaved(t *testing.T) {
	l := testLoop(t)
	var props codec.Properties
	props.Set(codec.PropContentType)
	props.ContentType = []byte("text/a")
	props.User.Add("k", "v")
	type pubCase struct {
		version byte
		sp      *PublishSpec
		alias   int
		s       *session
		peer    int
	}
	ms := time.Millisecond
	cases := []*pubCase{
		{version: 5, alias: 10, sp: &PublishSpec{Topic: []byte("t/a"), Rate: 1000, PayloadSize: 16, Props: &props}},
		{version: 5, sp: &PublishSpec{Topic: []byte("t/b"), Rate: 1000, Phase: ms / 3, PayloadSize: 16}},
		{version: 4, sp: &PublishSpec{Topic: []byte("t/c"), Rate: 1000, Phase: 2 * ms / 3, PayloadSize: 16, Props: &props}},
	}
	// Publishing starts an hour ahead of the engine's clock: startPublisher compares the
	// start with that real clock, and a start already passed when a publisher starts (a
	// slow or busy host between testLoop and here) counts what fell due as unsent.
	start := l.e.now() + int64(time.Hour)
	l.e.pubStart.Store(start)
	for i, c := range cases {
		c.s, c.peer = publisherSession(t, l, c.version, i, c.sp, c.alias)
	}
	for now := start; now < start+int64(10*ms); now += int64(ms / 3) { // one publisher due per pass
		l.publishDue(now)
	}
	buf := make([]byte, 64<<10)
	for _, c := range cases {
		n, err := unix.Read(c.peer, buf)
		if err != nil {
			t.Fatal(err)
		}
		in, v, count := buf[:n], codec.Version(c.version), 0
		for len(in) > 0 {
			h, body, used, err := codec.Split(in, 1<<20)
			if err != nil || used == 0 {
				t.Fatalf("%s: split: %v", c.sp.Topic, err)
			}
			var pk codec.Publish
			if err := codec.DecodePublish(h, body, v, &pk); err != nil {
				t.Fatalf("%s: %v", c.sp.Topic, err)
			}
			in = in[used:]
			count++
			wantTopic, wantCT, wantUser, wantAlias := c.sp.Topic, "", false, uint16(0)
			if v == codec.V5 && c.sp.Props != nil {
				wantCT, wantUser = "text/a", true
			}
			if c.alias > 0 {
				wantAlias = 1
				if count > 1 {
					wantTopic = nil
				}
			}
			if !bytes.Equal(pk.Topic, wantTopic) || string(pk.Props.ContentType) != wantCT ||
				pk.Props.Has(codec.PropUserProperty) != wantUser || pk.Props.TopicAlias != wantAlias {
				t.Fatalf("%s message %d: topic %q content type %q user properties %v alias %d; want %q %q %v %d",
					c.sp.Topic, count, pk.Topic, pk.Props.ContentType, pk.Props.Has(codec.PropUserProperty),
					pk.Props.TopicAlias, wantTopic, wantCT, wantUser, wantAlias)
			}
		}
		if count < 9 {
			t.Fatalf("%s: %d messages, want 10", c.sp.Topic, count)
		}
	}
}

// publisherSession adds to l a connected session of the given version for client, one end of
// a stream socket pair (the other end returned for the test to read), and starts its
// publisher of sp with a broker that takes alias topic aliases.
func publisherSession(t *testing.T, l *loop, version byte, client int, sp *PublishSpec, alias int) (*session, int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Close(fds[0]); _ = unix.Close(fds[1]) })
	s := &session{fd: int32(fds[0]), version: version, state: stConnected, flags: sfVerdict, client: int32(client)}
	l.add(s)
	l.startPublisher(s, sp, 0, alias, false)
	return s, fds[1]
}

// TestPublishersShareSpec: the publishers of one group, whose specs differ only in topic,
// number, phase and receivers, share one spec in their loop and keep their topics in the
// loop's topic store; each still sends its own topic and number, with the group's
// properties and its own topic alias. A spec with a Response Topic stays its publisher's.
func TestPublishersShareSpec(t *testing.T) {
	l := testLoop(t)
	var props codec.Properties
	props.Set(codec.PropContentType)
	props.ContentType = []byte("text/a")
	ms := time.Millisecond
	group := func(topic string, number uint32, phase time.Duration) *PublishSpec {
		return &PublishSpec{Topic: []byte(topic), Number: number, Phase: phase, Receivers: int(number), Rate: 1000,
			PayloadSize: 16, Props: &props}
	}
	type pubCase struct {
		sp    *PublishSpec
		alias int
		s     *session
		peer  int
	}
	cases := []*pubCase{
		{sp: group("dev/1/t", 7, 0), alias: 10},
		{sp: group("dev/22/t", 8, ms/4)},
		{sp: group("dev/333/t", 9, ms/2), alias: 10},
		{sp: &PublishSpec{Topic: []byte("req/4"), Number: 10, Phase: 3 * ms / 4, Rate: 1000, PayloadSize: 16, Props: &props,
			ResponseTopic: []byte("resp/4")}},
	}
	start := l.e.now() + int64(time.Hour) // see TestPublishPropsInterleaved
	l.e.pubStart.Store(start)
	for i, c := range cases {
		c.s, c.peer = publisherSession(t, l, 5, i, c.sp, c.alias)
	}
	shared := l.pubs[0].spec
	for i, c := range cases[:3] {
		if p := l.pubs[int32(i)]; p.spec != shared || p.spec == c.sp {
			t.Fatalf("publisher %d: spec %p, want the loop's shared one %p", i, p.spec, shared)
		}
	}
	if p := l.pubs[3]; p.spec != cases[3].sp {
		t.Fatal("a publisher with a Response Topic does not keep its own spec")
	}
	if shared.Topic != nil || shared.Number != 0 || shared.Phase != 0 || shared.Receivers != 0 {
		t.Fatalf("the shared spec keeps a publisher's own fields: %+v", shared)
	}
	for _, c := range cases {
		c.sp.Topic[0] = 'X' // the publisher's topic is its own copy, not the spec's bytes
	}
	for now := start; now < start+int64(10*ms); now += int64(ms / 4) { // one publisher due per pass
		l.publishDue(now)
	}
	buf := make([]byte, 64<<10)
	for i, c := range cases {
		// The request publisher's spec is its own: its topic is the spec's bytes, changed.
		want := strings.Fields("dev/1/t dev/22/t dev/333/t Xeq/4")[i]
		n, err := unix.Read(c.peer, buf)
		if err != nil {
			t.Fatal(err)
		}
		in, count := buf[:n], 0
		for len(in) > 0 {
			h, body, used, err := codec.Split(in, 1<<20)
			if err != nil || used == 0 {
				t.Fatalf("%s: split: %v", want, err)
			}
			var pk codec.Publish
			if err := codec.DecodePublish(h, body, codec.V5, &pk); err != nil {
				t.Fatalf("%s: %v", want, err)
			}
			in = in[used:]
			count++
			wantTopic, wantAlias := want, uint16(0)
			if c.alias > 0 {
				wantAlias = 1
				if count > 1 {
					wantTopic = ""
				}
			}
			number := binary.BigEndian.Uint32(pk.Payload[8:12]) & numberMask
			if string(pk.Topic) != wantTopic || pk.Props.TopicAlias != wantAlias || string(pk.Props.ContentType) != "text/a" ||
				number != c.sp.Number || (i == 3) != pk.Props.Has(codec.PropResponseTopic) {
				t.Fatalf("%s message %d: topic %q alias %d content type %q number %d response topic %q; want %q %d %q %d",
					want, count, pk.Topic, pk.Props.TopicAlias, pk.Props.ContentType, number, pk.Props.ResponseTopic,
					wantTopic, wantAlias, "text/a", c.sp.Number)
			}
		}
		if count < 9 {
			t.Fatalf("%s: %d messages, want 10", want, count)
		}
	}
	// A group's next publisher keeps its own state alone: not the spec it was made from,
	// nor that spec's topic bytes.
	sp := group("dev/4444/t", 11, 0)
	spec, topic := weak.Make(sp), weak.Make(&sp.Topic[0])
	p := l.publisher(int32(len(cases)), sp)
	sp = nil
	runtime.GC()
	if spec.Value() != nil || topic.Value() != nil {
		t.Errorf("a publisher of the group keeps its spec (%v) or its topic bytes (%v)", spec.Value() != nil, topic.Value() != nil)
	}
	if string(p.topic) != "dev/4444/t" || p.number != 11 || p.spec != shared {
		t.Errorf("publisher: topic %q number %d, shared spec %v", p.topic, p.number, p.spec == shared)
	}
}

// TestSharedSpecKeysEveryField: publishers share a spec only when theirs differ in nothing
// but topic, number, phase and receivers (TopicReceivers too). Every other field of PublishSpec, one added later
// too, changed alone gives a spec of its own; a spec with a Response Topic, a topic suffix,
// topics to cycle over or a client's own template values (ClientID, ClientIndex) is never
// shared.
func TestSharedSpecKeysEveryField(t *testing.T) {
	l := testLoop(t)
	base := PublishSpec{Rate: 10, PayloadSize: 16}
	shared := l.sharedSpec(&base)
	perClient := map[string]bool{"Topic": true, "Number": true, "Phase": true, "Receivers": true, "TopicReceivers": true}
	own := map[string]bool{"ResponseTopic": true, "TopicSuffix": true, "Topics": true, "ClientID": true, "ClientIndex": true}
	typ := reflect.TypeFor[PublishSpec]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		sp := base
		v := reflect.ValueOf(&sp).Elem().Field(i)
		switch v.Kind() {
		case reflect.Bool:
			v.SetBool(!v.Bool())
		case reflect.Int, reflect.Int64:
			v.SetInt(v.Int() + 3)
		case reflect.Uint8, reflect.Uint32:
			v.SetUint(v.Uint() + 1)
		case reflect.Float64:
			v.SetFloat(v.Float() + 1)
		case reflect.Slice:
			if f.Type == reflect.TypeFor[[][]byte]() {
				v.Set(reflect.ValueOf([][]byte{[]byte("x"), []byte("y")}))
				break
			}
			s := reflect.MakeSlice(f.Type, 1, 1)
			switch e := s.Index(0); e.Kind() {
			case reflect.Pointer:
				e.Set(reflect.New(f.Type.Elem().Elem()))
			case reflect.Int:
				e.SetInt(2)
			default:
				e.SetUint('x')
			}
			v.Set(s)
		case reflect.Pointer:
			v.Set(reflect.New(f.Type.Elem()))
		default:
			t.Fatalf("PublishSpec.%s is a %s: teach this test to change it", f.Name, v.Kind())
		}
		if own[f.Name] {
			if p := l.publisher(int32(100+i), &sp); p.spec != &sp {
				t.Errorf("a spec with %s set is shared", f.Name)
			}
			continue
		}
		if got := l.sharedSpec(&sp); (got == shared) != perClient[f.Name] {
			t.Errorf("specs differing in %s alone: shared %v, want %v (specKey must hold every field not per client)",
				f.Name, got == shared, perClient[f.Name])
		}
	}
}
