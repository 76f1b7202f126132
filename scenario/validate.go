package scenario

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Validate fills in the defaults that depend on other fields (publish rate, warm-up, drain,
// payload size) and checks the scenario as a whole: every field's range, the rules of its
// type (Point-To-Point has as many subscribers as publishers, Fan-In fewer, Fan-Out more,
// Connections none and no messages, Publish no subscribers, Subscribe no publishers and no
// messages of its own), and combinations that cannot work (a payload smaller than the
// measurement header, MQTT 5 properties or subscription options on a 3.x group, subscription
// options on a group that does not subscribe, No Local on a shared subscription or on a
// Round-Trip group, client ids that collide or are too long for MQTT 3.1, a publisher topic
// no subscriber receives). It returns every problem, one line each, joined (see Errors), or
// nil.
//
// MQTT 3.1 clients may use QoS 2: MQTT 3.1 defines it, so Validate does not refuse it.
func (s *Scenario) Validate() error {
	s.applyDefaults()
	l := &errList{File: s.file}
	s.check(l)
	return l.Err()
}

func (s *Scenario) check(l *errList) {
	if s.Groups != nil || s.Type == TypeMixed {
		s.checkMixed(l)
		return
	}
	known := s.Type.known()
	switch {
	case s.Type == "":
		l.Add("type", "missing (want one of %s)", typeList())
	case !known:
		l.Add("type", "%s is not a scenario type (want one of %s)%s", show(string(s.Type)), typeList(),
			suggest(string(s.Type), typeNames()))
	}
	msgs := s.Type.hasMessages()

	// A group that the type has no use for may be given with client_count 0 (xmq_scn files
	// write both groups), and is then ignored.
	switch {
	case known && !s.Type.hasPublishers() && s.Publishers != nil && s.Publishers.ClientCount != 0:
		l.Add("publishers", "%s has no publishers (found %d; its subscribers receive what others publish)",
			s.typeName(), s.Publishers.ClientCount)
	case known && !s.Type.hasPublishers():
	case s.Publishers == nil:
		l.Add("publishers", "missing (%s needs a publisher group)", s.typeName())
	default:
		s.checkGroup(l, "publishers", s.Publishers, true)
	}
	switch {
	case known && s.Type.hasSubscribers() && s.Subscribers == nil:
		l.Add("subscribers", "missing (%s needs a subscriber group)", s.typeName())
	case known && !s.Type.hasSubscribers() && s.Subscribers != nil && s.Subscribers.ClientCount != 0:
		switch s.Type {
		case TypeRoundTrip:
			l.Add("subscribers", "a Round-Trip scenario has no subscriber group (each client subscribes to its own topic)")
		case TypePublish:
			l.Add("subscribers", "a Publish scenario has no subscribers (found %d; use Fan-In, Fan-Out or Point-To-Point to receive)",
				s.Subscribers.ClientCount)
		default:
			l.Add("subscribers", "%s has no subscribers (found %d)", s.typeName(), s.Subscribers.ClientCount)
		}
	case s.Subscribers != nil && (!known || s.Type.hasSubscribers()):
		s.checkGroup(l, "subscribers", s.Subscribers, false)
	}
	if known && s.Publishers != nil && s.Subscribers != nil && s.Type.hasPublishers() && s.Type.hasSubscribers() {
		s.checkCounts(l)
	}
	if s.Publishers != nil && s.Subscribers != nil && s.Publishers.ClientCount > 0 && s.Subscribers.ClientCount > 0 {
		if idsCollide(s.Publishers.IDPrefix, s.Publishers.ClientCount, s.Subscribers.IDPrefix, s.Subscribers.ClientCount) {
			l.Add("subscribers.id_prefix", "%s gives client ids that publishers also use (id_prefix %s); ids must be unique",
				show(s.Subscribers.IDPrefix), show(s.Publishers.IDPrefix))
		}
	}
	if s.Type == TypeRoundTrip && s.Publishers != nil && len(s.Publishers.Topics) == 1 &&
		!compileTemplate(s.Publishers.Topics[0]).indexed {
		l.Add("publishers.topics", "%s is the same for every client; a Round-Trip topic must hold $clientid or $clientindex",
			show(s.Publishers.Topics[0]))
	}
	if s.Type == TypeSharedSubscription && s.Subscribers != nil && len(s.Subscribers.Topics) > 0 {
		shared := false
		for _, t := range s.Subscribers.Topics {
			shared = shared || strings.HasPrefix(t, sharePrefix)
		}
		if !shared {
			l.Add("subscribers.topics", "a Shared-Subscription scenario needs a \"$share/<group>/<filter>\" filter")
		}
	}
	s.checkParameters(l, msgs)
	s.checkServer(l)
	s.checkThresholds(l)
	if len(l.Errs) == 0 && known && s.Type.expectsDelivery() {
		s.checkReach(l)
	}
}

func (s *Scenario) typeName() string {
	if s.Type == TypeMixed {
		return "a mixed scenario without a publishing group"
	}
	if s.Type.known() {
		return "a " + string(s.Type) + " scenario"
	}
	return "every scenario but Subscribe"
}

func typeNames() []string {
	out := make([]string, len(Types))
	for i, t := range Types {
		out[i] = string(t)
	}
	return out
}

func typeList() string {
	n := typeNames()
	return strings.Join(n[:len(n)-1], ", ") + " or " + n[len(n)-1]
}

func (s *Scenario) checkGroup(l *errList, name string, g *Group, pub bool) {
	msgs := s.Type.hasMessages()
	switch {
	case g.ClientCount < 1:
		l.Add(name+".client_count", "%d is not a client count (must be ≥ 1)", g.ClientCount)
	case g.ClientCount > maxClients:
		l.Add(name+".client_count", "%d is more clients than one plan holds (max %d)", g.ClientCount, maxClients)
	}
	if g.QoS > 2 {
		l.Add(name+".qos", "%d is not a QoS (want 0, 1 or 2)", g.QoS)
	}
	switch g.ProtocolVersion {
	case V31, V311, V5:
	default:
		l.Add(name+".protocol_version", "%d is not an MQTT protocol version (want 3 or 4 for 3.1.1, 5 for 5.0, or \"3.1\")", g.ProtocolVersion)
	}
	usesID := false
	for _, t := range g.Topics {
		usesID = usesID || strings.Contains(t, PlaceholderID)
	}
	if usesID && strings.ContainsAny(g.IDPrefix, "/+#") {
		l.Add(name+".id_prefix", "%s holds '/', '+' or '#', which $clientid would put in topics", show(g.IDPrefix))
	}
	if g.ProtocolVersion == V31 && g.ClientCount >= 1 {
		if n := len(g.IDPrefix) + digits(g.ClientCount-1); n > 23 {
			l.Add(name+".id_prefix", "%s gives client ids of up to %d bytes; MQTT 3.1 allows 23 (protocol_version 3 is MQTT 3.1.1)",
				show(g.IDPrefix), n)
		}
	}

	// Topics.
	count := max(g.ClientCount, 1)
	tpath := func(i int) string {
		if len(g.Topics) > 1 {
			return fmt.Sprintf("%s.topics[%d]", name, i)
		}
		return name + ".topics"
	}
	switch {
	case pub && !msgs:
		// Connections: topics are not used.
	case pub && len(g.Topics) == 0:
		l.Add(name+".topics", "missing (want the topic template a publisher publishes to, e.g. \"test/$clientindex\")")
	case pub && len(g.Topics) > 1:
		l.Add(name+".topics", "%d topics given; a publisher publishes to one topic template", len(g.Topics))
	case !pub && len(g.Topics) == 0:
		l.Add(name+".topics", "missing (want the filters a subscriber subscribes to, e.g. \"test/#\")")
	default:
		for i, raw := range g.Topics {
			t := compileTemplate(raw)
			var err error
			for _, j := range []int{0, count - 1} {
				x := t.expand(j, g.IDPrefix)
				if pub {
					err = checkTopicName(x)
				} else if err = checkFilter(raw); err == nil {
					err = checkFilter(x)
				}
				if err != nil {
					break
				}
			}
			if err != nil {
				l.Add(tpath(i), "%s %v", show(raw), err)
			}
		}
	}

	s.checkSubscriptionOptions(l, name, g, pub, tpath)

	// Publishing-only settings.
	if !pub && g.Retain {
		l.Add(name+".retain", "true, but subscribers publish nothing")
	}
	if !pub && len(g.PublishProperties) > 0 {
		l.Add(name+".publish_properties", "given, but subscribers publish nothing")
	}
	for _, list := range []struct {
		field  string
		props  []Property
		packet int
		pname  string
	}{
		{"connect_properties", g.ConnectProperties, onConnect, "CONNECT"},
		{"publish_properties", g.PublishProperties, onPublish, "PUBLISH"},
	} {
		if len(list.props) == 0 || (!pub && list.packet == onPublish) {
			continue
		}
		if g.ProtocolVersion != V5 {
			l.Add(name+"."+list.field, "MQTT 5 properties need protocol_version 5 (this group is MQTT %s)", g.ProtocolVersion)
			continue
		}
		for i, p := range list.props {
			d, ok := propertyByName(p.Name)
			if ok && d.packets&list.packet == 0 {
				l.Add(fmt.Sprintf("%s.%s[%d].name", name, list.field, i), "%s is not a %s property", show(p.Name), list.pname)
			}
			if p.Name == "response_topic" {
				if err := checkTopicName(p.Str); err != nil {
					l.Add(fmt.Sprintf("%s.%s[%d].value", name, list.field, i), "%s %v", show(p.Str), err)
				}
			}
		}
	}
}

// maxRetainHandling is the largest MQTT 5 Retain Handling option; 3 is a protocol error
// [MQTT-3.8.3-5].
const maxRetainHandling = 2

// notRetainHandling completes the message for a retain_handling value out of range.
const notRetainHandling = "is not a retain handling option (want 0 to send retained messages at every subscribe, 1 only for a new subscription, 2 never)"

// checkSubscriptionOptions checks the MQTT 5.0 subscription options of group g: they need
// a group that subscribes and protocol_version 5, and No Local a group whose own messages are
// not what it is there to receive.
func (s *Scenario) checkSubscriptionOptions(l *errList, name string, g *Group, pub bool, tpath func(int) string) {
	roundTrip := s.Type == TypeRoundTrip
	subscribes := !pub || roundTrip || !s.Type.known()
	opts := []struct {
		field string
		val   any
		set   bool
	}{
		{"no_local", g.NoLocal, g.NoLocal},
		{"retain_as_published", g.RetainAsPublished, g.RetainAsPublished},
		{"retain_handling", g.RetainHandling, g.RetainHandling != 0},
	}
	for _, o := range opts {
		path := name + "." + o.field
		switch {
		case !o.set:
		case !subscribes:
			l.Add(path, "%s, but the publishers of %s subscribe to nothing (subscription options apply to subscribers and Round-Trip clients)",
				show(o.val), s.typeName())
		case o.field == "retain_handling" && g.RetainHandling > maxRetainHandling:
			l.Add(path, "%s %s", show(o.val), notRetainHandling)
		case g.ProtocolVersion != V5:
			l.Add(path, "%s needs protocol_version 5 (subscription options are MQTT 5.0; this group is MQTT %s)",
				show(o.val), g.ProtocolVersion)
		case o.field == "no_local" && roundTrip && pub:
			l.Add(path, "true, but a Round-Trip client receives only its own messages, which No Local withholds (want false)")
		case o.field == "no_local":
			for i, t := range g.Topics {
				if strings.HasPrefix(t, sharePrefix) { // [MQTT-3.8.3-4]
					l.Add(path, "true, but %s %s is a shared subscription, on which No Local is a protocol error (want false)",
						tpath(i), show(t))
					break
				}
			}
		}
	}
}

func (s *Scenario) checkCounts(l *errList) {
	p, n := s.Publishers.ClientCount, s.Subscribers.ClientCount
	if p < 1 || n < 1 {
		return
	}
	switch s.Type {
	case TypePointToPoint:
		if n != p {
			l.Add("subscribers.client_count", "%d differs from publishers.client_count %d (Point-To-Point pairs each publisher with one subscriber)", n, p)
		}
	case TypeFanIn:
		if n >= p {
			l.Add("subscribers.client_count", "%d is not fewer than the %d publishers (Fan-In has fewer subscribers than publishers)", n, p)
		}
	case TypeFanOut:
		if n <= p {
			l.Add("subscribers.client_count", "%d is not more than the %d publishers (Fan-Out has more subscribers than publishers)", n, p)
		}
	}
}

func (s *Scenario) checkParameters(l *errList, msgs bool) {
	p := &s.Parameters
	const pp = "parameters."
	if !(p.ConnectionRate > 0) || math.IsInf(p.ConnectionRate, 0) {
		l.Add(pp+"connection_rate", "%s is not a rate (must be > 0)", show(p.ConnectionRate))
	}
	switch {
	case p.Duration < 0:
		l.Add(pp+"duration_sec", "%s is not a duration (must be ≥ 0)", show(p.Duration))
	case p.Duration == 0 && !msgs:
		l.Add(pp+"duration_sec", "0 leaves no time to run (must be > 0)")
	case p.Duration == 0 && p.MessageCount == 0:
		l.Add(pp+"duration_sec", "0 leaves no time to run (must be > 0, or set message_count)")
	}
	if msgs {
		checkRateAndPayload(l, pp, p.PublishRate, p.PayloadSize, p.Payload, fmt.Sprintf("the payload literal (%d-byte header + %d bytes = %d)",
			MinPayloadSize, len(p.Payload), MinPayloadSize+len(p.Payload)))
	} else {
		if p.PublishRate != 0 {
			l.Add(pp+"publish_rate", "%s, but %s publishes no messages (want 0)", show(p.PublishRate), s.typeName())
		}
		if p.MessageCount != 0 {
			l.Add(pp+"message_count", "%d, but %s publishes no messages (want 0)", p.MessageCount, s.typeName())
		}
	}
	if p.KeepAlive < 0 || p.KeepAlive > maxKeepAlive || p.KeepAlive%1e9 != 0 {
		l.Add(pp+"keep_alive_sec", "%s is not a keepalive (want whole seconds, 0 to 65535)", show(p.KeepAlive))
	}
	if p.MaxInflight < 1 || p.MaxInflight > 65535 {
		l.Add(pp+"max_inflight_messages", "%d is not an in-flight limit (must be 1 to 65535)", p.MaxInflight)
	}
	if p.MessageCount < 0 {
		l.Add(pp+"message_count", "%d is not a message count (must be ≥ 0; 0 means no limit)", p.MessageCount)
	}
	switch {
	case p.Warmup < 0:
		l.Add(pp+"warmup_sec", "%s is not a duration (must be ≥ 0)", show(p.Warmup))
	case msgs && p.Duration > 0 && p.Warmup >= p.Duration:
		l.Add(pp+"warmup_sec", "%s leaves nothing to measure (must be < duration_sec %s)", show(p.Warmup), show(p.Duration))
	}
	if p.Drain < 0 {
		l.Add(pp+"drain_sec", "%s is not a duration (must be ≥ 0)", show(p.Drain))
	}
	if p.Reconnect != ReconnectOff && p.Reconnect != ReconnectBackoff {
		l.Add(pp+"reconnect", "%s is not a reconnect policy (want \"off\" or \"backoff\")", show(string(p.Reconnect)))
	}
	for i, b := range p.Bind {
		if _, err := parseSource(b); err != nil && !errors.Is(err, errInterface) {
			l.Add(fmt.Sprintf("%sbind[%d]", pp, i), "%s %v", show(b), err)
		}
	}
	s.checkStages(l, msgs)
}

// Limits of parameters.
const (
	// MaxPublishRate is the most messages per second one publisher is asked to send.
	MaxPublishRate = 1_000_000
	maxKeepAlive   = 65535 * 1e9
)

func (s *Scenario) checkServer(l *errList) {
	if len(s.Server.Brokers) == 0 && (s.Server.Port < 1 || s.Server.Port > 65535) {
		l.Add("server.port", "%d is not a port (must be 1 to 65535)", s.Server.Port)
	}
	s.checkCredentials(l)
	s.checkTransport(l)
	for i, b := range s.Server.Brokers {
		if _, err := parseBroker(b); err != nil {
			l.Add(fmt.Sprintf("server.brokers[%d]", i), "%s %v", show(b), err)
		}
	}
}

// CheckCredentials refuses a password without a username when a group's clients speak
// MQTT 3.1.1 or 3.1, which send a password only with a username ([MQTT-3.1.2-22]): a broker
// closes every such connection, after it has read the password. Validate checks it too; a
// run calls it again once its password is known (--password-file, $MQBLAST_PASSWORD).
func (s *Scenario) CheckCredentials() error {
	l := &errList{File: s.file}
	s.checkCredentials(l)
	return l.Err()
}

func (s *Scenario) checkCredentials(l *errList) {
	if s.Server.Password == "" || s.Server.Username != "" {
		return
	}
	list := []struct {
		name string
		g    *Group
	}{{"publishers", s.Publishers}, {"subscribers", s.Subscribers}}
	for _, g := range s.Groups {
		if g != nil {
			list = append(list, struct {
				name string
				g    *Group
			}{"clients of group " + strconv.Quote(g.Name), &g.Group})
		}
	}
	for _, g := range list {
		if g.g != nil && g.g.ClientCount > 0 && g.g.ProtocolVersion != V5 {
			l.Add("server.password", "a password without server.username: the %s are MQTT %s clients, which send a password "+
				"only with a username ([MQTT-3.1.2-22]; the broker closes the connection); give server.username "+
				"(--set server.username=NAME, -u NAME), or protocol_version 5 to every group, or no password",
				g.name, g.g.ProtocolVersion)
			return
		}
	}
}

// SecretPath reports whether path, as --set takes it, names a field whose value is a
// secret (server.password): no message, document or command line may show its value.
func SecretPath(path string) bool {
	f, _, err := new(Scenario).lookup(strings.TrimSpace(path))
	return err == nil && f.secret
}

// checkReach reports a publisher topic that no subscriber receives, for the first and the
// last publisher: a typo in a topic would otherwise show up only as an empty run.
func (s *Scenario) checkReach(l *errList) {
	m := newMatcher(s.clientGroups(), true)
	t := compileTemplate(s.Publishers.Topics[0])
	n := s.Publishers.ClientCount
	for _, j := range []int{0, n - 1} {
		topic := t.expand(j, s.Publishers.IDPrefix)
		if m.deliveries(topic) == 0 {
			l.Add("publishers.topics", "%s (publisher %d) reaches no subscriber", show(topic), j)
			return
		}
	}
}

func digits(n int) int {
	return len(strconv.Itoa(n))
}

// idsCollide reports whether some id prefixA+i (i < countA) equals prefixB+j (j < countB).
func idsCollide(prefixA string, countA int, prefixB string, countB int) bool {
	if len(prefixA) > len(prefixB) {
		prefixA, countA, prefixB, countB = prefixB, countB, prefixA, countA
	}
	if !strings.HasPrefix(prefixB, prefixA) {
		return false
	}
	rest := prefixB[len(prefixA):]
	if rest == "" {
		return true
	}
	// prefixB = prefixA + rest: A's id i collides with B's j when i's digits are rest+j's.
	if rest[0] == '0' || strings.Trim(rest, "0123456789") != "" || len(rest) > 12 {
		return false
	}
	r, _ := strconv.Atoi(rest)
	// The smallest such i is rest followed by "0" (j = 0).
	return r <= (countA-1)/10 && countB >= 1
}

// checkRateAndPayload checks a publishing rate and payload size at path (the prefix of
// publish_rate and payload_size): a rate one publisher can send, and a size between the
// measurement header and an MQTT packet's limit that fits the payload literal, if any
// (literalText names it in the error).
func checkRateAndPayload(l *errList, path string, rate float64, size int, literal, literalText string) {
	switch {
	case !(rate > 0) || math.IsInf(rate, 0):
		l.Add(path+"publish_rate", "%s is not a rate (must be > 0)", show(rate))
	case rate > MaxPublishRate:
		l.Add(path+"publish_rate", "%s is more than one publisher can send (max %d msgs/s)", show(rate), MaxPublishRate)
	}
	switch {
	case size < MinPayloadSize:
		l.Add(path+"payload_size", "%d is smaller than the %d-byte measurement header (must be ≥ %d)", size, MinPayloadSize, MinPayloadSize)
	case size > maxPayloadSize:
		l.Add(path+"payload_size", "%d is larger than an MQTT packet can carry (max %d)", size, maxPayloadSize)
	case literal != "" && size != MinPayloadSize+len(literal):
		l.Add(path+"payload_size", "%d does not fit %s", size, literalText)
	}
}
