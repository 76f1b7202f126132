package run

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mqblast/mqblast/codec"
	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/run/spec"
)

// The tests of brokers that do not do what the plan asked: they refuse messages or
// subscriptions, end connections with a reason, lack a capability, speak another version,
// grant a lower QoS. Each run's document must add up (result.CheckDocument) and say what
// the broker did in broker_behaviour and the summary.

// aclFile writes a Mosquitto ACL file of lines for anonymous clients and returns the
// config line that loads it.
func aclFile(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "acl")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return "acl_file " + p
}

// quickP2P is a short quick-p2p-100 run (2 s) against addr at MQTT version v, changed by
// more, its document on stdout.
func quickP2P(addr, v string, more ...string) *Spec {
	sp := quick("quick-p2p-100", addr, append(sets("parameters.duration_sec", 2, "parameters.warmup_sec", "500ms",
		"parameters.drain_sec", "500ms", "publishers.protocol_version", v, "subscribers.protocol_version", v), more...)...)
	sp.NoCheck, sp.Outputs.Format = true, "json"
	return sp
}

// saturated reports whether the client called itself saturated for a cause of its own (not
// the host's cores being short, which other tests on the host make).
func saturated(res *result.Result) bool {
	if !res.Client.Saturated {
		return false
	}
	for _, ev := range res.Client.SaturationEvidence {
		if !strings.Contains(ev, "the host's cores are short") {
			return true
		}
	}
	return false
}

// TestPublishRefusedByACL: Mosquitto with an ACL that lets the clients read the topics but
// not write them answers every 5.0 QoS 1 PUBLISH with PUBACK 0x87 (not authorized). Those
// messages are refused, by reason: not acknowledged, and their copies not lost.
func TestPublishRefusedByACL(t *testing.T) {
	t.Parallel()
	m := testbroker.StartMosquitto(t, testbroker.Options{Extra: []string{aclFile(t, "topic read quick/p2p/#")}})
	res := checkDoc(t, doOK(t, quickP2P(m.Addr, "5")))
	msg := res.Messages
	if msg.Published < 1000 || msg.Refused["not_authorized"] != msg.Published || msg.RefusedTotal != msg.Published ||
		msg.Acked != 0 || msg.Lost != 0 || msg.RefusedCopies != msg.Expected || msg.Received != 0 {
		t.Errorf("published %d: acked %d, refused %v (%d), lost %d, expected %d, refused copies %d, received %d",
			msg.Published, msg.Acked, msg.Refused, msg.RefusedTotal, msg.Lost, msg.Expected, msg.RefusedCopies, msg.Received)
	}
	b := res.Behaviour("publish_refused:not_authorized")
	if b == nil || b.Count != msg.Published || !strings.Contains(b.Evidence, "0x87") {
		t.Errorf("broker_behaviour %+v", res.BrokerBehaviour)
	}
}

// TestBrokerDisconnectReason: a broker that ends each QoS 2 publisher's connection with a
// 5.0 DISCONNECT 0x9B (QoS not supported) and a reason string: the drops count by that
// reason, the example keeps the reason string (escaped), and the summary says it.
func TestBrokerDisconnectReason(t *testing.T) {
	t.Parallel()
	sc := &testbroker.Script{Disconnect: func(_ string, typ codec.PacketType, qos codec.QoS) (codec.ReasonCode, string, bool) {
		return codec.ReasonQoSNotSupported, "QoS 2 is off here\x1b[31m", typ == codec.TypePublish && qos == 2
	}}
	rt := testbroker.StartScripted(t, sc, nil, nil)
	pub := func(format string) *Spec {
		sp := pubSpec(rt.Addr, "x/$clientindex", sets("publishers.client_count", 3, "publishers.protocol_version", 5,
			"publishers.qos", 2, "parameters.publish_rate", 20, "parameters.duration_sec", 1)...)
		sp.NoCheck, sp.Outputs.Format = true, format
		return sp
	}
	res := checkDoc(t, doOK(t, pub("json")))
	if n := res.Connections.DroppedBy["disconnect:qos_not_supported"]; n != 3 || res.Connections.DroppedBy["closed_by_broker"] != 0 {
		t.Errorf("dropped_by_cause %v, want disconnect:qos_not_supported 3", res.Connections.DroppedBy)
	}
	b := res.Behaviour("disconnect:qos_not_supported")
	if b == nil || b.Count != 3 || !strings.Contains(b.Example, `QoS 2 is off here\x1b[31m`) {
		t.Errorf("broker_behaviour %+v", res.BrokerBehaviour)
	}
	text := doSpec(t, pub("text"))
	if !strings.Contains(text.stdout, "the broker ended 3 connections with a DISCONNECT: qos_not_supported") ||
		strings.Contains(text.stdout, "\x1b") {
		t.Errorf("summary:\n%s", text.stdout)
	}
}

// TestSubscriptionsRefusedEndTheRun: when no subscription can be made the run ends at
// once, fails (exit 1) and says why: a broker refuses every 3.1.1 SUBSCRIBE (SUBACK 0x80;
// Mosquitto 2.0.11's ACL file does not refuse a SUBSCRIBE, later ones do), and a broker
// without shared subscriptions ends each 5.0 subscriber's connection with DISCONNECT 0x9E
// instead of a SUBACK (which the run waited 30 s for).
func TestSubscriptionsRefusedEndTheRun(t *testing.T) {
	t.Parallel()
	refuse := &testbroker.Script{Suback: func(string, codec.QoS, codec.Version) codec.ReasonCode { return 0x80 }}
	rt := testbroker.StartScripted(t, refuse, nil, nil)
	r := doSpec(t, quickP2P(rt.Addr, "4", "parameters.duration_sec=20"))
	if !r.failed() || !strings.Contains(r.said(), "no_subscription: the broker refused every subscription (unspecified_error 100)") {
		t.Errorf("refused: %v\n%s", r.err, r.stderr)
	}
	if r.took > 12*time.Second {
		t.Errorf("the run took %v: it published for its 20 s instead of ending when no subscription was made", r.took)
	}
	if res := r.res; res == nil || res.Messages.Published != 0 || res.Behaviour("subscribe_refused:unspecified_error") == nil {
		t.Fatalf("result %+v", res)
	}

	sc := &testbroker.Script{Disconnect: func(_ string, typ codec.PacketType, _ codec.QoS) (codec.ReasonCode, string, bool) {
		return codec.ReasonSharedSubsNotSupported, "", typ == codec.TypeSubscribe
	}}
	rt = testbroker.StartScripted(t, sc, nil, nil)
	sp := quick("quick-sharedsub-100-5", rt.Addr, "publishers.protocol_version=5", "subscribers.protocol_version=5")
	sp.NoCheck, sp.Duration = true, spec.Duration(20*time.Second)
	r = doSpec(t, sp)
	if !r.failed() || !strings.Contains(r.said(), "every subscriber's connection ended before its SUBACK") {
		t.Errorf("shared subscriptions ended: %v\n%s", r.err, r.stderr)
	}
	if r.took > 12*time.Second {
		t.Errorf("the run took %v: it waited for SUBACKs of subscribers the broker had disconnected", r.took)
	}
	if res := r.res; res == nil || res.Connections.DroppedBy["disconnect:shared_subscriptions_not_supported"] != 5 {
		t.Errorf("result %+v", res)
	}
}

// TestMaxQoS: Mosquitto with max_qos 1. At 5.0 its CONNACK says Maximum QoS 1: a QoS 2
// plan fails after connecting, in the broker's words, or runs at QoS 1 with
// accept_downgrade (every message acknowledged, no connection lost); at 3.1.1 it closes
// the QoS 2 publishers, and the result says so, with their number.
func TestMaxQoS(t *testing.T) {
	t.Parallel()
	m := testbroker.StartMosquitto(t, testbroker.Options{Extra: []string{"max_qos 1"}})
	pub := func(v string, downgrade bool) ran {
		sp := pubSpec(m.Addr, "x/$clientindex", sets("publishers.client_count", 5, "publishers.protocol_version", v,
			"publishers.qos", 2, "parameters.publish_rate", 20, "parameters.duration_sec", 1)...)
		sp.NoCheck, sp.AcceptDowngrade = true, downgrade
		if downgrade {
			sp.Outputs.Format = "json"
		}
		return doSpec(t, sp)
	}
	r := pub("5", false)
	if !r.failed() || !strings.Contains(r.said(), "the broker's CONNACK says Maximum QoS 1: 5 publishers of QoS 2") ||
		!strings.Contains(r.said(), "--accept-downgrade") {
		t.Errorf("5.0 without accept_downgrade: %v\n%s", r.err, r.stderr)
	}
	r = pub("5", true)
	if r.err != nil {
		t.Fatalf("5.0 with accept_downgrade: %v\n%s", r.err, r.stderr)
	}
	res := checkDoc(t, r)
	if msg := res.Messages; msg.Published < 50 || msg.Acked != msg.Published || res.Connections.Dropped != 0 {
		t.Errorf("published %d, acked %d, dropped %d", msg.Published, msg.Acked, res.Connections.Dropped)
	}
	if b := res.Behaviour("max_qos_1_for_qos_2"); b == nil || b.Count != 5 {
		t.Errorf("broker_behaviour %+v", res.BrokerBehaviour)
	}
	r = pub("4", false)
	if !strings.Contains(r.stdout, "the broker closed 5 QoS 2 publishers (max_qos 1?)") {
		t.Errorf("3.1.1: %v\n%s", r.err, r.stdout)
	}
}

// TestRetainUnavailable: Mosquitto with retain_available false says Retain Available 0 in
// its 5.0 CONNACK: a retaining plan fails after connecting, or publishes without retain
// with accept_downgrade, and no connection is lost for it.
func TestRetainUnavailable(t *testing.T) {
	t.Parallel()
	m := testbroker.StartMosquitto(t, testbroker.Options{Extra: []string{"retain_available false"}})
	pub := func(downgrade bool) ran {
		sp := pubSpec(m.Addr, "x/$clientindex", sets("publishers.client_count", 4, "publishers.protocol_version", 5,
			"publishers.qos", 1, "publishers.retain", true, "parameters.publish_rate", 20, "parameters.duration_sec", 1)...)
		sp.NoCheck, sp.AcceptDowngrade = true, downgrade
		return doSpec(t, sp)
	}
	if r := pub(false); !r.failed() || !strings.Contains(r.said(), "Retain Available 0: 4 retaining publishers") {
		t.Errorf("without accept_downgrade: %v\n%s", r.err, r.stderr)
	}
	r := pub(true)
	if r.err != nil {
		t.Fatalf("with accept_downgrade: %v\n%s", r.err, r.stderr)
	}
	res := r.res
	if msg := res.Messages; msg.Published < 40 || msg.Acked != msg.Published || res.Connections.Dropped != 0 {
		t.Errorf("published %d, acked %d, dropped %v", msg.Published, msg.Acked, res.Connections.DroppedBy)
	}
	if b := res.Behaviour("retain_unavailable"); b == nil || b.Count != 4 {
		t.Errorf("broker_behaviour %+v", res.BrokerBehaviour)
	}
}

// TestNot50Broker: a broker that answers a 5.0 CONNECT with 3.1.1's CONNACK "unacceptable
// protocol version" (aedes) is said not to speak 5.0, not to break the protocol; one that
// closes the connection without a CONNACK (RabbitMQ 3.10) may not speak it.
func TestNot50Broker(t *testing.T) {
	t.Parallel()
	conn := func(addr, v string) ran {
		sp := quick("quick-conn-100", addr, sets("publishers.client_count", 2, "publishers.protocol_version", v,
			"parameters.duration_sec", 1)...)
		sp.NoCheck = true
		return doSpec(t, sp)
	}
	sc := &testbroker.Script{Connack: func(_ string, v codec.Version) (codec.Connack, []byte) {
		if v == codec.V5 {
			return codec.Connack{}, []byte{0x20, 0x02, 0x00, 0x01}
		}
		return codec.Connack{}, nil
	}}
	rt := testbroker.StartScripted(t, sc, nil, nil)
	r := conn(rt.Addr, "5")
	want := "the broker does not support MQTT 5.0 (it answered as 3.1.1: 0x01)"
	if !r.failed() || !strings.Contains(r.said(), want) || strings.Contains(r.said()+r.stdout, "protocol_error") {
		t.Errorf("%v, want a failed run saying %q\nstdout:\n%s\nstderr:\n%s", r.err, want, r.stdout, r.stderr)
	}

	// RabbitMQ 3.x closes a 5.0 CONNECT's connection without a word.
	sc = &testbroker.Script{Connack: func(_ string, v codec.Version) (codec.Connack, []byte) {
		if v == codec.V5 {
			return codec.Connack{}, []byte{}
		}
		return codec.Connack{}, nil
	}}
	rt = testbroker.StartScripted(t, sc, nil, nil)
	r = conn(rt.Addr, "5")
	want = "connection closed before CONNACK: the broker may not support MQTT 5.0"
	if !r.failed() || !strings.Contains(r.said(), want) || !strings.Contains(r.said(), "-V 4") {
		t.Errorf("closed: %v, want a failed run saying %q\nstderr:\n%s", r.err, want, r.stderr)
	}
	if r = conn(rt.Addr, "4"); r.err != nil {
		t.Errorf("3.1.1: %v\n%s", r.err, r.stderr)
	}
}

// TestGrantedQoSBelowAsked: a broker that grants QoS 1 to QoS 2 subscriptions (the Router,
// as RabbitMQ does): the result records and says the grant.
func TestGrantedQoSBelowAsked(t *testing.T) {
	t.Parallel()
	rt := testbroker.StartRouter(t, func(uint32, uint32) bool { return true },
		func(_ string, subs []string, _, _ uint32) []string { return subs })
	res := checkDoc(t, doOK(t, quickP2P(rt.Addr, "5", "subscribers.qos=2")))
	b := res.Behaviour("granted_qos_1_for_qos_2")
	if b == nil || b.Count != 100 || b.Evidence != "granted QoS 1 for 100 subscriptions that asked QoS 2" {
		t.Errorf("broker_behaviour %+v", res.BrokerBehaviour)
	}
	if res.Messages.Lost != 0 || res.Messages.Received != res.Messages.Expected {
		t.Errorf("messages %+v", res.Messages)
	}
}

// TestNotSharedBroker: aedes 1.x takes a 3.1.1 "$share/g/t" filter as a topic filter, which
// matches nothing: a Shared-Subscription run delivers nothing, and the result says the
// broker does not share, counts the copies as not_shared_copies and none as lost.
func TestNotSharedBroker(t *testing.T) {
	t.Parallel()
	testbroker.Binary(t, "../cmd/mqblast")
	f := testbroker.StartAedes(t)
	run := func(format string) ran {
		sp := quick("quick-sharedsub-100-5", f.Addr, sets("parameters.warmup_sec", "500ms", "parameters.drain_sec", "500ms",
			"publishers.protocol_version", 4, "subscribers.protocol_version", 4)...)
		sp.NoCheck, sp.Duration, sp.Outputs.Format = true, spec.Duration(2*time.Second), format
		return doOK(t, sp)
	}
	res := checkDoc(t, run("json"))
	m := res.Messages
	if m.Expected < 1000 || m.Received != 0 || m.Lost != 0 || m.NotSharedCopies != m.Expected || m.Acked != m.Published {
		t.Errorf("expected %d, received %d, lost %d, not shared copies %d, acked %d of %d",
			m.Expected, m.Received, m.Lost, m.NotSharedCopies, m.Acked, m.Published)
	}
	if b := res.Behaviour("not_shared"); b == nil || b.Count != 5 || !strings.Contains(b.Evidence, "the broker does not share") {
		t.Errorf("broker_behaviour %+v", res.BrokerBehaviour)
	}
	text := run("text")
	if !strings.Contains(text.stdout, "the broker does not share: it granted 5 $share/ filters") ||
		!strings.Contains(text.stdout, "on $share/ filters of a broker that does not share") {
		t.Errorf("summary:\n%s", text.stdout)
	}
}

// TestRedeliveredAfterTakeover: QoS 1 subscribers with kept sessions at 500 msg/s each
// against Mosquitto and aedes, whose sessions another connection takes over three times:
// what the broker had sent and not seen acknowledged comes again after the client
// reconnects (Mosquitto sets DUP on it, aedes 1.x does not). Those copies are redelivered
// (QoS 1 permits them), not duplicated, and nothing is lost.
func TestRedeliveredAfterTakeover(t *testing.T) {
	// Sequential: beside other tests aedes now and then drops a connection and loses QoS 1
	// copies with it, which this test would count against the redelivery it checks.
	testbroker.Binary(t, "../cmd/mqblast") // built before the clock of the take-overs starts
	for _, b := range []struct {
		name  string
		start func() string
	}{
		{"mosquitto", func() string { return testbroker.StartMosquitto(t, testbroker.Options{}).Addr }},
		{"aedes", func() string { return testbroker.StartAedes(t).Addr }},
	} {
		t.Run(b.name, func(t *testing.T) {
			addr := b.start()
			done := make(chan error, 1)
			go func() {
				var errs []error
				for _, wait := range []time.Duration{1500 * time.Millisecond, 2 * time.Second, 2 * time.Second} {
					errs = append(errs, takeOver("rdls", 5, "4", wait)(addr))
				}
				done <- errors.Join(errs...)
			}()
			sp := quick("quick-p2p-100", addr, sets("parameters.warmup_sec", "500ms", "parameters.drain_sec", "1s",
				"parameters.publish_rate", 500, "parameters.reconnect", "backoff", "publishers.client_count", 5,
				"subscribers.client_count", 5, "publishers.id_prefix", "rdlp", "subscribers.id_prefix", "rdls",
				"subscribers.clean_session", false)...)
			sp.NoCheck, sp.Duration, sp.Outputs.Format = true, spec.Duration(7*time.Second), "json"
			r := doSpec(t, sp)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if r.err != nil {
				t.Fatalf("%v\n%s", r.err, r.stderr)
			}
			res := checkDoc(t, r)
			msg := res.Messages
			t.Logf("published %d, received %d, redelivered %d, duplicated %d, lost %d; dropped %v, reconnected %d",
				msg.Published, msg.Received, msg.Redelivered, msg.Duplicated, msg.Lost, res.Connections.DroppedBy, res.Connections.Reconnected)
			if msg.Redelivered == 0 || msg.Duplicated != 0 || msg.Lost != 0 || msg.Received != msg.Expected {
				t.Errorf("redelivered %d, duplicated %d, lost %d, received %d of %d", msg.Redelivered, msg.Duplicated, msg.Lost, msg.Received, msg.Expected)
			}
			if res.Connections.Reconnected < 15 {
				t.Errorf("reconnected %d, want the 5 subscribers back after each of 3 take-overs", res.Connections.Reconnected)
			}
		})
	}
}

// takeOver returns a during function that, after wait, connects as each of the n clients
// prefix0..prefix(n-1) with their session kept (Clean Session 0; at 5.0 a Session Expiry
// of 300 s), reads the CONNACK, holds the connection 300 ms acknowledging nothing the
// broker sends, and closes it: the broker ends the client's own connection (a session
// taken over), and the messages it sent the intruder stay unacknowledged in the session,
// for the client to get again when it reconnects.
func takeOver(prefix string, n int, v string, wait time.Duration) func(addr string) error {
	return func(addr string) error {
		time.Sleep(wait)
		ver := codec.V311
		if v == "5" {
			ver = codec.V5
		}
		var errs []error
		var wg sync.WaitGroup
		var mu sync.Mutex
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := intrude(addr, fmt.Sprintf("%s%d", prefix, i), ver); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		return errors.Join(errs...)
	}
}

func intrude(addr, id string, v codec.Version) error {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return err
	}
	defer c.Close() //nolint:errcheck
	p := codec.Connect{ClientID: []byte(id), KeepAlive: 30}
	if v == codec.V5 {
		p.Props.Set(codec.PropSessionExpiry)
		p.Props.SessionExpiry = 300
	}
	if _, err := c.Write(codec.AppendConnect(nil, &p, v)); err != nil {
		return err
	}
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	var hdr [2]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		return fmt.Errorf("%s: no CONNACK: %w", id, err)
	}
	if hdr[0] != 0x20 {
		return fmt.Errorf("%s: the answer to CONNECT is not a CONNACK: % x", id, hdr)
	}
	_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	_, _ = io.Copy(io.Discard, c) // what the session held, unacknowledged
	return nil
}

// TestSuback311With50Code: a 3.1.1 SUBACK carrying a failure code of 5.0's (0x91, which
// mochi 2.7 sends to a resumed session's SUBSCRIBE) is a refusal by that reason, not a
// malformed packet that drops the connection; a code of neither kind is, and the drop's
// example shows the packet.
func TestSuback311With50Code(t *testing.T) {
	t.Parallel()
	sc := &testbroker.Script{Suback: func(string, codec.QoS, codec.Version) codec.ReasonCode { return 0x91 }}
	rt := testbroker.StartScripted(t, sc, nil, nil)
	r := doSpec(t, quickP2P(rt.Addr, "4", "parameters.duration_sec=5"))
	if !r.failed() || !strings.Contains(r.said(), "the broker refused every subscription (packet_identifier_in_use 100)") ||
		strings.Contains(r.said(), "protocol_error") {
		t.Errorf("%v\n%s", r.err, r.stderr)
	}
	if res := r.res; res == nil || res.Connections.Dropped != 0 || res.Behaviour("subscribe_refused:packet_identifier_in_use") == nil {
		t.Errorf("result %+v", res)
	}

	// A code that is no failure (0x05) is malformed: the connection ends as a protocol
	// error whose example shows the packet.
	sc = &testbroker.Script{Suback: func(string, codec.QoS, codec.Version) codec.ReasonCode { return 0x05 }}
	rt = testbroker.StartScripted(t, sc, nil, nil)
	r = doSpec(t, quickP2P(rt.Addr, "4"))
	if r.res == nil {
		t.Fatalf("no result: %v\n%s", r.err, r.stderr)
	}
	var ex string
	for _, e := range r.res.Errors {
		if e.Kind == "dropped:protocol_error" {
			ex = e.Example
		}
	}
	if want := "codec: reason code not valid for this packet (SUBACK: 90 03 00 01 05)"; ex != want {
		t.Errorf("protocol error example %q, want %q; errors %+v", ex, want, r.res.Errors)
	}
}

// TestSharedToEveryMember: a broker that gives every copy on a "$share/" filter to every
// member of the group (it takes the filter as a plain one) does not share: of the five
// members' copies one is received, the other four are unexpected not_expected (not
// duplicated), and broker_behaviour says so.
func TestSharedToEveryMember(t *testing.T) {
	t.Parallel()
	rt := testbroker.StartRouter(t, nil, func(_ string, subs []string, _, _ uint32) []string { return subs })
	for _, procs := range []spec.Procs{1, 3} { // 3: members in several worker processes
		sp := quick("quick-sharedsub-100-5", rt.Addr, "parameters.warmup_sec=500ms", "parameters.drain_sec=500ms")
		sp.NoCheck, sp.Duration, sp.Outputs.Format, sp.Procs = true, spec.Duration(2*time.Second), "json", procs
		r := doSpec(t, sp)
		if r.err != nil {
			t.Fatalf("procs %d: %v\n%s", procs, r.err, r.stderr)
		}
		res := checkDoc(t, r)
		m := res.Messages
		if m.Expected < 1000 || m.Received != m.Expected || m.Lost != 0 || m.Duplicated != 0 || m.Unexpected["not_expected"] != 4*m.Expected {
			t.Errorf("procs %d: expected %d, received %d, lost %d, duplicated %d, unexpected %v", procs, m.Expected, m.Received, m.Lost, m.Duplicated, m.Unexpected)
		}
		if b := res.Behaviour("delivered_to_every_member"); b == nil || b.Count != 4*m.Expected || !strings.Contains(b.Evidence, "the broker does not share") {
			t.Errorf("procs %d: broker_behaviour %+v", procs, res.BrokerBehaviour)
		}
	}
}
