package reactor

import (
	"bytes"
	"testing"
	"time"

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
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = unix.Close(fds[0]); _ = unix.Close(fds[1]) })
		c.s = &session{fd: int32(fds[0]), version: c.version, state: stConnected, flags: sfVerdict, client: int32(i)}
		c.peer = fds[1]
		l.add(c.s)
		l.startPublisher(c.s, c.sp, 0, c.alias, false)
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
