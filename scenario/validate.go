package scenario

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
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
	defer s.checkIdentity(l)
	if s.Groups != nil || s.Type == TypeMixed {
		s.checkMixed(l)
		return
	}
	s.checkPlain(l)
}

// checkPlain checks a plain file: the rules of its type (which groups it has, their
// sizes, a Round-Trip topic per client, a Shared-Subscription's share), the rules of every
// group for its publishers and subscribers (checkGroup), then its parameters, server and
// thresholds, and whether its publishers reach its subscribers.
func (s *Scenario) checkPlain(l *errList) {
	var buf [2]ClientGroup
	groups := listOf(&buf, s.plainGroups(&buf))
	pubs, subs := s.plainAt(true), s.plainAt(false)
	at := func(g *ClientGroup) groupAt {
		if g.Name == pubs.path {
			return pubs
		}
		return subs
	}
	group := func(a groupAt) *ClientGroup {
		for _, g := range groups {
			if g.Name == a.path {
				return g
			}
		}
		return nil
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
		s.checkGroup(l, pubs, group(pubs))
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
		s.checkGroup(l, subs, group(subs))
	}
	if known && s.Publishers != nil && s.Subscribers != nil && s.Type.hasPublishers() && s.Type.hasSubscribers() {
		s.checkCounts(l)
	}
	if s.Publishers != nil && s.Subscribers != nil && s.Publishers.ClientCount > 0 && s.Subscribers.ClientCount > 0 {
		pf, sf := s.Publishers.ids(), s.Subscribers.ids()
		switch {
		case pf.plain() && sf.plain():
			if idsCollide(s.Publishers.IDPrefix, s.Publishers.ClientCount, s.Subscribers.IDPrefix, s.Subscribers.ClientCount) {
				path, v := s.idSource("subscribers.", s.Subscribers)
				ppath, pv := s.idSource("publishers.", s.Publishers)
				l.Add(path, "%s gives client ids that publishers also use (%s %s); ids must be unique",
					show(v), ppath[strings.LastIndexByte(ppath, '.')+1:], show(pv))
			}
		case pf.overlaps(sf):
			path, v := s.idSource("subscribers.", s.Subscribers)
			_, pv := s.idSource("publishers.", s.Publishers)
			l.Add(path, "%s may give client ids that publishers also use (%s): the text before and after the index does not tell them apart; ids must be unique",
				show(v), show(pv))
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
	if len(l.Errs) == 0 {
		s.checkReach(l, groups, func(i int) groupAt { return at(groups[i]) })
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

// groupAt is where a group stands in its file, for the messages of its rules: a "groups"
// entry, or a plain file's publishers or subscribers, whose group is named after them.
type groupAt struct {
	path string // "groups[2]", "publishers" or "subscribers"
	// plain marks a plain file's publishers or subscribers: their publish rate, payload
	// size and keepalive are the parameters' (checked there), and their topics are what
	// its type makes of them (a publisher's topic, a subscriber's filters, or unused).
	plain   bool
	filters string // the key of the group's filters: "filters", or "topics" for a plain file's subscribers
	// sends says that the group's publishing settings (retain, publish properties) apply,
	// receives that its subscription options do.
	sends, receives bool
	words           *groupWords
}

// groupWords are the words a group's messages speak of it in.
type groupWords struct {
	idHint      string // after the MQTT 3.1 client id limit
	topicWant   string // what a missing publish topic should be
	oneTopic    string // who publishes to one topic template
	filtersWant string // what missing filters should be
	roundTrip   string // a round-trip client
	noPublish   string // who publishes nothing
	noReach     string // after a topic that reaches no subscriber (a client's index)
	// noSubscribe says who subscribes to nothing, in a scenario of s's type.
	noSubscribe func(s *Scenario) string
}

// The words of a "groups" entry's messages and of a plain file's publishers' and
// subscribers'.
var (
	entryWords = groupWords{
		topicWant:   `the topic template the group publishes to, e.g. "devices/$clientid/telemetry"`,
		oneTopic:    "a group",
		filtersWant: `the filters the group subscribes to, e.g. "$share/backend/devices/+/telemetry"`,
		roundTrip:   "round-trip",
		noPublish:   "the group publishes nothing",
		noReach: `(client %d) reaches no subscribing group; give a group filters that match it, or "expect_delivery": false ` +
			"when no client of the run receives it",
		noSubscribe: func(*Scenario) string { return "the group subscribes to nothing" },
	}
	plainWords = groupWords{
		idHint:      " (protocol_version 3 is MQTT 3.1.1)",
		topicWant:   `the topic template a publisher publishes to, e.g. "test/$clientindex"`,
		oneTopic:    "a publisher",
		filtersWant: `the filters a subscriber subscribes to, e.g. "test/#"`,
		roundTrip:   "Round-Trip",
		noPublish:   "subscribers publish nothing",
		noReach:     "(publisher %d) reaches no subscriber",
		noSubscribe: func(s *Scenario) string {
			return "the publishers of " + s.typeName() + " subscribe to nothing (subscription options apply to subscribers and Round-Trip clients)"
		},
	}
)

// checkArrival checks a group's arrival and burst size; pub says whether it publishes,
// noPublish what to say if not.
func checkArrival(l *errList, gp string, g *Group, pub bool, noPublish string) {
	switch g.Arrival {
	case "", ArrivalConstant, ArrivalPoisson, ArrivalBurst:
		if g.Arrival != "" && g.Arrival != ArrivalConstant && !pub {
			l.Add(gp+"arrival", "%s, but %s", show(string(g.Arrival)), noPublish)
		}
	default:
		l.Add(gp+"arrival", "%s is not an arrival (want \"constant\", \"poisson\" or \"burst\")", show(string(g.Arrival)))
	}
	switch {
	case g.BurstSize < 0 || g.BurstSize > MaxBurstSize:
		l.Add(gp+"burst_size", "%d is not a burst size (want 1 to %d messages)", g.BurstSize, MaxBurstSize)
	case g.Arrival == ArrivalBurst && g.BurstSize == 0:
		l.Add(gp+"burst_size", "missing: arrival \"burst\" needs the messages of one burst (1 to %d)", MaxBurstSize)
	case g.BurstSize != 0 && g.Arrival != ArrivalBurst:
		l.Add(gp+"burst_size", "%d, but arrival is %s (burst_size is for arrival \"burst\")", g.BurstSize, show(string(g.arrival())))
	}
}

// arrival returns g's arrival, "constant" when not given.
func (g *Group) arrival() Arrival {
	if g.Arrival == "" {
		return ArrivalConstant
	}
	return g.Arrival
}

// entryAt returns where "groups" entry g stands, at path.
func entryAt(path string, g *ClientGroup) groupAt {
	return groupAt{path: path, filters: "filters", sends: g.Publishes(), receives: g.Subscribes(), words: &entryWords}
}

// plainAt returns where a plain file's publishers (pub) or subscribers stand.
func (s *Scenario) plainAt(pub bool) groupAt {
	if !pub {
		return groupAt{path: "subscribers", plain: true, filters: "topics", receives: true, words: &plainWords}
	}
	return groupAt{path: "publishers", plain: true, filters: "topics", sends: true,
		receives: s.Type == TypeRoundTrip || !s.Type.known(), words: &plainWords}
}

// checkGroup checks the rules of every group, however its file gives it (at): its clients,
// version, QoS and client ids, the topic it publishes to, its response topic, its filters
// and their subscription options, its publishing settings, keepalive and session, and its
// MQTT 5 properties.
func (s *Scenario) checkGroup(l *errList, at groupAt, g *ClientGroup) {
	w := at.words
	pub, sub := g.Publishes(), g.Subscribes()
	gp := at.path + "."
	switch {
	case g.ClientCount < 1:
		l.Add(gp+"client_count", "%d is not a client count (must be ≥ 1)", g.ClientCount)
	case g.ClientCount > maxClients:
		l.Add(gp+"client_count", "%d is more clients than one plan holds (max %d)", g.ClientCount, maxClients)
	}
	switch g.ProtocolVersion {
	case V31, V311, V5:
	default:
		l.Add(gp+"protocol_version", "%d is not an MQTT protocol version (want 3 or 4 for 3.1.1, 5 for 5.0, or \"3.1\")", g.ProtocolVersion)
	}
	if g.QoS > 2 {
		l.Add(gp+"qos", "%d is not a QoS (want 0, 1 or 2)", g.QoS)
	}
	idPath, idValue := s.idSource(gp, &g.Group)
	if g.ProtocolVersion == V31 && g.ClientCount >= 1 {
		if n := g.ids().maxLen(g.ClientCount); n > 23 {
			l.Add(idPath, "%s gives client ids of up to %d bytes; MQTT 3.1 allows 23%s", show(idValue), n, w.idHint)
		}
	}
	if strings.ContainsAny(g.IDPrefix+g.IDSuffix, "/+#") {
		for _, t := range append(append([]string(nil), g.Topics...), g.Filters...) {
			if strings.Contains(t, PlaceholderID) {
				l.Add(idPath, "%s holds '/', '+' or '#', which $clientid would put in topics", show(idValue))
				break
			}
		}
	}
	count := max(g.ClientCount, 1)
	// The topic it publishes to.
	switch {
	case !pub && len(g.Topics) > 0 && !at.plain:
		l.Add(gp+"topics", "given, but the group publishes nothing (a subscribing group's filters go in \"filters\")")
	case !pub:
	case len(g.Topics) == 0:
		l.Add(gp+"topics", "missing (want %s)", w.topicWant)
	case (len(g.Topics) > 1 || hasRange(g.Topics)) && (g.has(BehaviourRoundTrip) || g.has(BehaviourRequest)):
		l.Add(gp+"topics", "%d topics given; a round-trip or request client publishes to one topic template", len(g.Topics))
	case len(g.Topics) > 1 || hasRange(g.Topics):
		cycle, err := topicCycle(g.Topics)
		if err != nil {
			l.Add(gp+"topics", "%v", err)
			break
		}
		for _, raw := range cycle {
			t := compileTemplate(raw)
			err := checkModulo(&t, true, "")
			for _, j := range []int{0, count - 1} {
				if err == nil {
					err = checkTopicName(t.expand(j, g.ids()))
				}
			}
			if err != nil {
				l.Add(gp+"topics", "%s %v", show(raw), err)
				break
			}
		}
	default:
		t := compileTemplate(g.Topics[0])
		if err := checkModulo(&t, !g.has(BehaviourRoundTrip), "a round-trip topic is also its client's filter"); err != nil {
			l.Add(gp+"topics", "%s %v", show(g.Topics[0]), err)
		}
		for _, j := range []int{0, count - 1} {
			if err := checkTopicName(t.expand(j, g.ids())); err != nil {
				l.Add(gp+"topics", "%s %v", show(g.Topics[0]), err)
				break
			}
		}
		if g.has(BehaviourRoundTrip) && !t.indexed && !at.plain { // a plain file's: checkPlain
			l.Add(gp+"topics", "%s is the same for every client; a round-trip topic must hold $clientid or $clientindex", show(g.Topics[0]))
		}
	}
	// The response topic of its requests.
	switch {
	case !g.has(BehaviourRequest) && g.given&cgGivenResponseTopic != 0:
		l.Add(gp+"response_topic", "given, but the group has no request behaviour")
	case g.has(BehaviourRequest) && g.ResponseTopic == "":
		l.Add(gp+"response_topic", "missing (want each client's own topic for its responses, e.g. \"rpc/responses/$clientid\")")
	case g.has(BehaviourRequest):
		t := compileTemplate(g.ResponseTopic)
		if err := checkModulo(&t, false, "a response topic is its requester's own filter"); err != nil {
			l.Add(gp+"response_topic", "%s %v", show(g.ResponseTopic), err)
		}
		for _, j := range []int{0, count - 1} {
			if err := checkTopicName(t.expand(j, g.ids())); err != nil {
				l.Add(gp+"response_topic", "%s %v", show(g.ResponseTopic), err)
				break
			}
		}
		switch {
		case !t.indexed:
			l.Add(gp+"response_topic", "%s is the same for every client; each requester needs its own (hold $clientid or $clientindex)", show(g.ResponseTopic))
		case len(g.Topics) == 1 && t.expand(0, g.ids()) == requestTopic(g, 0):
			l.Add(gp+"response_topic", "%s is the group's request topic too; responses need a topic of their own", show(g.ResponseTopic))
		}
	}
	// The filters it subscribes to.
	fpath := func(i int) string {
		if len(g.Filters) > 1 {
			return fmt.Sprintf("%s%s[%d]", gp, at.filters, i)
		}
		return gp + at.filters
	}
	switch {
	case g.has(BehaviourRoundTrip) && len(g.Filters) > 0:
		l.Add(gp+"filters", "given, but a round-trip group subscribes to its own topic")
	case g.has(BehaviourRequest) && len(g.Filters) > 0:
		l.Add(gp+"filters", "given, but a request group subscribes to its response_topic")
	case !sub && len(g.Filters) > 0:
		l.Add(gp+"filters", "given, but the group does not subscribe (add \"subscribe\" to its behaviours)")
	case g.has(BehaviourSubscribe) && len(g.Filters) == 0:
		l.Add(gp+at.filters, "missing (want %s)", w.filtersWant)
	case g.has(BehaviourRespond) && len(g.Filters) == 0:
		l.Add(gp+"filters", "missing (want the filters of the requests the group answers, e.g. \"$share/rpc/rpc/requests/+\")")
	default:
		for i, raw := range g.Filters {
			t := compileTemplate(raw)
			err := checkFilter(raw)
			if err == nil {
				err = checkModulo(&t, false, "a filter's placeholders name one client each")
			}
			for _, j := range []int{0, count - 1} {
				if err == nil {
					err = checkFilter(t.expand(j, g.ids()))
				}
			}
			if err != nil {
				l.Add(fpath(i), "%s %v", show(raw), err)
			}
		}
	}
	// Its subscription options.
	for _, o := range []struct {
		field string
		val   any
		set   bool
	}{{"no_local", g.NoLocal, g.NoLocal}, {"retain_as_published", g.RetainAsPublished, g.RetainAsPublished},
		{"retain_handling", g.RetainHandling, g.RetainHandling != 0}} {
		switch {
		case !o.set:
		case !at.receives:
			l.Add(gp+o.field, "%s, but %s", show(o.val), w.noSubscribe(s))
		case o.field == "retain_handling" && g.RetainHandling > maxRetainHandling:
			l.Add(gp+o.field, "%s %s", show(o.val), notRetainHandling)
		case g.ProtocolVersion != V5:
			l.Add(gp+o.field, "%s needs protocol_version 5 (subscription options are MQTT 5.0; this group is MQTT %s)", show(o.val), g.ProtocolVersion)
		case o.field == "no_local" && g.has(BehaviourRoundTrip):
			l.Add(gp+o.field, "true, but a %s client receives only its own messages, which No Local withholds (want false)", w.roundTrip)
		case o.field == "no_local":
			for i, t := range g.Filters {
				if strings.HasPrefix(t, sharePrefix) { // [MQTT-3.8.3-4]
					l.Add(gp+o.field, "true, but %s %s is a shared subscription, on which No Local is a protocol error (want false)", fpath(i), show(t))
					break
				}
			}
		}
	}
	// Publishing settings.
	if g.given&cgGivenFraction != 0 {
		switch {
		case !g.has(BehaviourPublish):
			l.Add(gp+"fraction", "%s, but the group has no publish behaviour (fraction is the share of a publish group's clients that publish)", show(g.Fraction))
		case !(g.Fraction > 0 && g.Fraction <= 1):
			l.Add(gp+"fraction", "%s is not a fraction of the group (want more than 0, at most 1)", show(g.Fraction))
		}
	}
	switch {
	case pub && !at.plain:
		literal := s.Parameters.Payload
		if g.PayloadTemplate != "" {
			literal = "" // the template is the payload; parameters.payload is refused with it
		}
		checkRateAndPayload(l, gp, g.PublishRate, bodySize(g.PayloadSize, g.Measure), literal,
			fmt.Sprintf("the payload literal of parameters.payload (%d bytes)", literalSize(s.Parameters.Payload)))
		if g.given&cgGivenPayloadTemplate != 0 {
			checkTemplate(l, gp, g.PayloadTemplate)
		}
		if g.given&cgGivenPayload != 0 {
			checkSizes(l, gp, g.PayloadSizes, g.PayloadTemplate != "" || g.PayloadFile != "", s.Parameters.Payload != "")
		}
		if g.given&(cgGivenPayloadFile|cgGivenPayloadOrder|cgGivenMeasure) != 0 && (g.PayloadFile != "" || g.given&cgGivenPayloadOrder != 0) {
			checkPayloadFile(l, gp, g.PayloadFile, g.PayloadOrder, g.PayloadTemplate != "", s.Parameters.Payload != "", g.Measure)
		}
		if g.given&(cgGivenPayloadTemplate|cgGivenMeasure|cgGivenPayloadFile) != 0 || (g.Measure != "" && g.Measure != MeasureHeader) {
			checkMeasure(l, gp, g.Measure, g.PayloadTemplate, g.PayloadFile, &g.Group)
		}
		if g.Start < 0 || (s.Parameters.Duration > 0 && g.Start >= s.Parameters.Duration) {
			l.Add(gp+"start_sec", "%s is not a start within the run (want 0 ≤ start_sec < duration_sec %s)", show(g.Start), show(s.Parameters.Duration))
		}
	case !pub:
		if g.given&cgGivenRate != 0 {
			l.Add(gp+"publish_rate", "%s, but the group publishes nothing", show(g.PublishRate))
		}
		if g.given&cgGivenPayload != 0 {
			l.Add(gp+"payload_size", "%d, but the group publishes nothing", g.PayloadSize)
		}
		if g.given&cgGivenPayloadTemplate != 0 {
			l.Add(gp+"payload_template", "given, but the group publishes nothing")
		}
		if g.given&cgGivenPayloadFile != 0 {
			l.Add(gp+"payload_file", "given, but the group publishes nothing")
		}
		if g.Start != 0 {
			l.Add(gp+"start_sec", "%s, but the group publishes nothing (start_sec delays its publishing)", show(g.Start))
		}
	}
	if !at.sends && g.Retain {
		l.Add(gp+"retain", "true, but %s", w.noPublish)
	}
	if !at.sends && len(g.PublishProperties) > 0 {
		l.Add(gp+"publish_properties", "given, but %s", w.noPublish)
	}
	checkArrival(l, gp, &g.Group, pub, w.noPublish)
	if !pub && !g.ExpectDelivery {
		l.Add(gp+"expect_delivery", "false, but the group publishes nothing")
	}
	if !at.plain && (g.KeepAlive < 0 || g.KeepAlive > maxKeepAlive || g.KeepAlive%1e9 != 0) {
		l.Add(gp+"keep_alive_sec", "%s is not a keepalive (want whole seconds, 0 to 65535)", show(g.KeepAlive))
	}
	if g.given&cgGivenSessionExpiry != 0 {
		switch {
		case g.ProtocolVersion != V5:
			l.Add(gp+"session_expiry_sec", "needs protocol_version 5 (MQTT %s sessions of clean_session false never expire)", g.ProtocolVersion)
		case g.SessionExpiry < 0 || g.SessionExpiry%1e9 != 0 || g.SessionExpiry > math.MaxUint32*time.Second:
			l.Add(gp+"session_expiry_sec", "%s is not a session expiry (want whole seconds, 0 to 4294967295)", show(g.SessionExpiry))
		}
		for i, p := range g.ConnectProperties {
			if p.Name == "session_expiry_interval" {
				l.Add(fmt.Sprintf("%sconnect_properties[%d]", gp, i), "session_expiry_interval given twice (here and in session_expiry_sec)")
			}
		}
	}
	// Properties.
	for _, list := range []struct {
		field  string
		props  []Property
		packet int
		pname  string
	}{{"connect_properties", g.ConnectProperties, onConnect, "CONNECT"}, {"publish_properties", g.PublishProperties, onPublish, "PUBLISH"}} {
		if len(list.props) == 0 || (!at.sends && list.packet == onPublish) {
			continue
		}
		if g.ProtocolVersion != V5 {
			l.Add(gp+list.field, "MQTT 5 properties need protocol_version 5 (this group is MQTT %s)", g.ProtocolVersion)
			continue
		}
		for i, p := range list.props {
			if d, ok := propertyByName(p.Name); ok && d.packets&list.packet == 0 {
				l.Add(fmt.Sprintf("%s%s[%d].name", gp, list.field, i), "%s is not a %s property", show(p.Name), list.pname)
			}
			if p.Name == "response_topic" {
				if err := checkTopicName(p.Str); err != nil {
					l.Add(fmt.Sprintf("%s%s[%d].value", gp, list.field, i), "%s %v", show(p.Str), err)
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
		literal := p.Payload
		if p.PayloadTemplate != "" {
			literal = ""
		}
		checkRateAndPayload(l, pp, p.PublishRate, bodySize(p.PayloadSize, p.Measure), literal, fmt.Sprintf("the payload literal (%d measurement bytes + %d bytes = %d)",
			PayloadTextAt, len(p.Payload), literalSize(p.Payload)))
		if p.PayloadTemplate != "" && p.Payload != "" {
			l.Add(pp+"payload_template", "given with parameters.payload (a literal): give one of the two")
		}
		checkTemplate(l, pp, p.PayloadTemplate)
		checkSizes(l, pp, p.PayloadSizes, p.PayloadTemplate != "" || p.PayloadFile != "", p.Payload != "")
		checkPayloadFile(l, pp, p.PayloadFile, p.PayloadOrder, p.PayloadTemplate != "", p.Payload != "", p.Measure)
		if !s.Mixed() { // a mixed scenario's groups are checked with what they take of it
			checkMeasure(l, pp, p.Measure, p.PayloadTemplate, p.PayloadFile, s.Publishers)
		}
		if sb := s.Subscribers; p.Measure == MeasureProperty && sb != nil && s.Publishers != nil && s.Publishers.ProtocolVersion == V5 && sb.ProtocolVersion != V5 {
			l.Add(pp+"measure", "property, but subscribers are MQTT %s, which receive no properties (want protocol_version 5, or use mark)", sb.ProtocolVersion)
		}
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
	checkClientCert(l, "server.", s.Server.ClientCert)
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
	for i, g := range s.Groups {
		if g == nil || g.Server == nil || g.Server.Password == "" || g.Server.Username != "" || g.ProtocolVersion == V5 ||
			s.fileUsernames(&g.Group) {
			continue
		}
		l.Add(fmt.Sprintf("groups[%d].server.password", i), "a password without groups[%d].server.username: the group's clients "+
			"are MQTT %s clients, which send a password only with a username ([MQTT-3.1.2-22]; the broker closes the connection); "+
			"give the group's username, or protocol_version 5, or no password", i, g.ProtocolVersion)
	}
	if s.Server.Password == "" || s.Server.Username != "" {
		return
	}
	list := []struct {
		name string
		g    *Group
	}{{"publishers", s.Publishers}, {"subscribers", s.Subscribers}}
	for _, g := range s.Groups {
		if g != nil && (g.Server == nil || !g.Server.hasCredentials()) { // one with its own sends those
			list = append(list, struct {
				name string
				g    *Group
			}{"clients of group " + strconv.Quote(g.Name), &g.Group})
		}
	}
	for _, g := range list {
		if g.g != nil && g.g.ClientCount > 0 && g.g.ProtocolVersion != V5 && !s.fileUsernames(g.g) {
			l.Add("server.password", "a password without server.username: the %s are MQTT %s clients, which send a password "+
				"only with a username ([MQTT-3.1.2-22]; the broker closes the connection); give server.username "+
				"(--set server.username=NAME, -u NAME), or protocol_version 5 to every group, or no password",
				g.name, g.g.ProtocolVersion)
			return
		}
	}
}

// SecretPath reports whether path, as --set takes it, names a field whose value is a
// secret (server.password, a group's groups.NAME.server.password): no message, document
// or command line may show its value.
func SecretPath(path string) bool {
	_, ok := PasswordPath(path)
	return ok
}

// PasswordPath reports whether path, as --set takes it, names a password: the run's
// (server.password; group "") or a group's own (groups.NAME.server.password; group NAME).
func PasswordPath(path string) (group string, ok bool) {
	path = strings.TrimSpace(path)
	if rest, isGroup := strings.CutPrefix(path, "groups."); isGroup {
		name, _, _ := strings.Cut(rest, ".")
		s := &Scenario{Groups: []*ClientGroup{{Name: name}}}
		f, _, err := s.lookup(path)
		return name, err == nil && f.secret
	}
	f, _, err := new(Scenario).lookup(path)
	return "", err == nil && f.secret
}

// hasRange reports whether a topic template holds a range {A..B}.
func hasRange(topics []string) bool {
	for _, t := range topics {
		if _, n, _, _ := rangeAt(t); n > 0 {
			return true
		}
	}
	return false
}

// checkModulo checks the modulo placeholders ($clientindex%N) of template t: N at least 1,
// and none where allowed is false (why says why not); and the zero padding of each
// $clientindex:W, W from 1 to MaxIndexPad.
func checkModulo(t *template, allowed bool, why string) error {
	for _, p := range t.parts {
		switch {
		case p.pad < 0 || p.pad > MaxIndexPad:
			return fmt.Errorf("pads $clientindex to %d digits (want :W with W from 1 to %d)", max(p.pad, 0), MaxIndexPad)
		case p.ph != phIndexMod:
		case p.mod < 1:
			return errors.New("has $clientindex%0: a modulo must be 1 or more")
		case !allowed:
			return fmt.Errorf("has $clientindex%%%d, a modulo, which only the topics a group publishes to may hold (%s)", p.mod, why)
		}
	}
	return nil
}

// checkReach reports a publishing group, expected to deliver, whose first or last
// publisher's topic no subscribing group's filters match: a typo in a topic would
// otherwise show up only as an empty run, whose loss could not be counted. at says where
// group i stands.
func (s *Scenario) checkReach(l *errList, groups []*ClientGroup, at func(i int) groupAt) {
	m := newMatcher(groups, false)
	for i, g := range groups {
		if !g.Publishes() || !g.ExpectDelivery || g.has(BehaviourRequest) { // a request nobody here receives is answered outside
			continue
		}
		// A publisher that cycles over topics may leave some to no receiver, not all.
		cycle, err := topicCycle(g.Topics)
		if err != nil || len(cycle) < 2 {
			cycle = g.Topics[:1]
		}
		ts := make([]template, len(cycle))
		for k, raw := range cycle {
			ts[k] = compileTemplate(raw)
		}
	pubs:
		for _, j := range []int{0, g.Publishers() - 1} {
			reached := false
			for k := range ts {
				topic := ts[k].expand(j, g.ids())
				reached = reached || m.deliveries(topic) > 0
				// The property carrier travels in properties, which a 3.x receiver never gets.
				if g.Measure == MeasureProperty && g.ProtocolVersion == V5 && s.Mixed() &&
					m.anyReceiver(topic, func(gid, _ int) bool { return groups[gid].ProtocolVersion != V5 }) {
					l.Add(at(i).path+".measure", "property, but an MQTT 3.x group receives %s, without properties: its copies could not be measured (want every receiver at protocol_version 5, or use mark)", show(topic))
					break pubs
				}
			}
			if !reached {
				a := at(i)
				l.Add(a.path+".topics", "%s "+a.words.noReach, show(ts[0].expand(j, g.ids())), j)
				break
			}
		}
	}
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
	case literal != "" && size != literalSize(literal):
		l.Add(path+"payload_size", "%d does not fit %s", size, literalText)
	}
}
