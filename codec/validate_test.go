package codec_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/mqblast/mqblast/codec"
	"github.com/mqblast/mqblast/codec/codectest"
)

// TestValidateRejects covers what only the encoding side can get wrong: values wider than
// their bits, fields longer than a length prefix, properties in the wrong packet or version.
func TestValidateRejects(t *testing.T) {
	t.Parallel()
	long := []byte(strings.Repeat("x", 1<<16))
	check := func(name string, err, want error) {
		t.Helper()
		if !errors.Is(err, want) {
			t.Errorf("%s: err = %v, want %v", name, err, want)
		}
	}
	pub := func(mod func(*codec.Publish)) *codec.Publish {
		p := &codec.Publish{QoS: 1, ID: 1, Topic: []byte("a/b")}
		mod(p)
		return p
	}
	check("publish qos 3", pub(func(p *codec.Publish) { p.QoS = 3 }).Validate(codec.V311), codec.ErrInvalidQoS)
	check("publish qos 7", pub(func(p *codec.Publish) { p.QoS = 7 }).Validate(codec.V5), codec.ErrInvalidQoS)
	check("publish id 0", pub(func(p *codec.Publish) { p.ID = 0 }).Validate(codec.V311), codec.ErrZeroPacketID)
	check("publish wildcard", pub(func(p *codec.Publish) { p.Topic = []byte("a/#") }).Validate(codec.V5), codec.ErrMalformedTopic)
	check("publish nul", pub(func(p *codec.Publish) { p.Topic = []byte("a\x00") }).Validate(codec.V5), codec.ErrMalformedString)
	check("publish topic too long", pub(func(p *codec.Publish) { p.Topic = long }).Validate(codec.V5), codec.ErrFieldTooLong)
	check("publish dup qos 0", pub(func(p *codec.Publish) { p.QoS, p.Dup = 0, true }).Validate(codec.V5), codec.ErrDupQoS0)
	check("publish props in 3.1.1", pub(func(p *codec.Publish) {
		p.Props.TopicAlias = 1
		p.Props.Set(codec.PropTopicAlias)
	}).Validate(codec.V311), codec.ErrPropertyNotAllowed)
	check("publish user props in 3.1.1", pub(func(p *codec.Publish) { p.Props.User.Add("k", "v") }).Validate(codec.V311),
		codec.ErrPropertyNotAllowed)
	check("publish session expiry", pub(func(p *codec.Publish) { p.Props.Set(codec.PropSessionExpiry) }).Validate(codec.V5),
		codec.ErrPropertyNotAllowed)
	check("publish topic alias 0", pub(func(p *codec.Publish) { p.Props.Set(codec.PropTopicAlias) }).Validate(codec.V5),
		codec.ErrPropertyValue)
	check("publish unknown property bit", pub(func(p *codec.Publish) { p.Props.Present |= 1 << 4 }).Validate(codec.V5),
		codec.ErrUnknownProperty)
	check("publish version 6", pub(func(*codec.Publish) {}).Validate(6), codec.ErrVersion)

	sub := &codec.Subscribe{ID: 1, Filters: []codec.Subscription{{Filter: []byte("a"), RetainHandling: 3}}}
	check("subscribe retain handling 3", sub.Validate(codec.V5), codec.ErrSubscriptionOptions)
	sub = &codec.Subscribe{ID: 1, Filters: []codec.Subscription{{Filter: []byte("a"), NoLocal: true}}}
	check("subscribe no local in 3.1.1", sub.Validate(codec.V311), codec.ErrSubscriptionOptions)
	check("subscribe without filters", (&codec.Subscribe{ID: 1}).Validate(codec.V5), codec.ErrNoTopicFilters)
	sub = &codec.Subscribe{ID: 1, Filters: []codec.Subscription{{Filter: []byte("a")}}}
	sub.Props.SubIDs.Add(1)
	sub.Props.SubIDs.Add(2)
	check("subscribe two subscription ids", sub.Validate(codec.V5), codec.ErrDuplicateProperty)

	conn := &codec.Connect{ClientID: []byte("c"), CleanStart: true, HasWill: true, WillQoS: 3, WillTopic: []byte("w")}
	check("connect will qos 3", conn.Validate(codec.V311), codec.ErrInvalidQoS)
	conn = &codec.Connect{ClientID: []byte("c"), HasPassword: true}
	check("connect password only in 3.1.1", conn.Validate(codec.V311), codec.ErrConnectFlags)
	if err := conn.Validate(codec.V5); err != nil {
		t.Errorf("connect password only in 5.0: %v", err)
	}
	if err := conn.Validate(codec.V31); !errors.Is(err, codec.ErrConnectFlags) {
		t.Errorf("connect password only in 3.1: %v", err)
	}

	check("puback reason in 3.1.1", (&codec.Ack{ID: 1, Reason: 0x10}).Validate(codec.TypePuback, codec.V311), codec.ErrReasonCode)
	check("pubrel reason 0x10", (&codec.Ack{ID: 1, Reason: 0x10}).Validate(codec.TypePubrel, codec.V5), codec.ErrReasonCode)
	check("ack as a connect", (&codec.Ack{ID: 1}).Validate(codec.TypeConnect, codec.V5), codec.ErrReservedType)
	check("disconnect reason in 3.1.1", (&codec.Disconnect{Reason: 0x04}).Validate(codec.V311), codec.ErrReasonCode)
	check("unsuback reasons in 3.1.1", (&codec.Unsuback{ID: 1, Reasons: []codec.ReasonCode{0}}).Validate(codec.V311), codec.ErrReasonCode)
	check("suback 5.0 code in 3.1.1", (&codec.Suback{ID: 1, Reasons: []codec.ReasonCode{0x87}}).Validate(codec.V311), codec.ErrReasonCode)
	check("connack session present refused", (&codec.Connack{SessionPresent: true, Reason: 0x87}).Validate(codec.V5), codec.ErrConnackFlags)
	auth := &codec.Auth{Reason: 0x18}
	auth.Props.AuthData = []byte{1}
	auth.Props.Set(codec.PropAuthData)
	check("auth data without method", auth.Validate(), codec.ErrPropertyValue)
}

// TestUserProps checks the repeatable properties: order kept, iteration stops early, decoded
// lists iterate without allocating.
func TestUserProps(t *testing.T) {
	t.Parallel()
	var u codec.UserProps
	u.Add("a", "1")
	u.Add("b", "")
	u.Add("a", "2")
	var got []string
	for k, v := range u.All() {
		got = append(got, string(k)+"="+string(v))
	}
	if strings.Join(got, ",") != "a=1,b=,a=2" || u.Len() != 3 {
		t.Fatalf("pairs %v, len %d", got, u.Len())
	}
	for range u.All() {
		break // must not panic
	}
	// Decoded: the list aliases a property block that holds other properties too.
	v := vector(t, codectest.IDPublish5AllProps)
	h, body, _, _ := codec.Split(v.Raw, 0)
	var p codec.Publish
	if err := codec.DecodePublish(h, body, codec.V5, &p); err != nil {
		t.Fatal(err)
	}
	got = got[:0]
	for k, v := range p.Props.User.All() {
		got = append(got, string(k)+"="+string(v))
	}
	var ids []uint32
	for id := range p.Props.SubIDs.All() {
		ids = append(ids, id)
	}
	if strings.Join(got, ",") != "a=1,b=" || len(ids) != 2 || ids[0] != 5 || ids[1] != 128 {
		t.Fatalf("decoded pairs %v, ids %v", got, ids)
	}
	if !p.Props.Has(codec.PropUserProperty) || !p.Props.Has(codec.PropSubscriptionID) || p.Props.Has(codec.PropTopicAlias) {
		t.Fatalf("Has is wrong")
	}
}
