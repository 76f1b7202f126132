package scenario

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"
)

// TypeMixed is the type of a scenario that lists client groups ("groups"): several kinds of
// clients in one run, each group with its own behaviours, size and settings. A file with
// "groups" may leave "type" out; it then reads as Mixed.
const TypeMixed Type = "Mixed"

// Behaviour is what the clients of a group do, as a group's "behaviours" lists them.
type Behaviour string

// Behaviours of a group. A group holds its connections with keepalive in every case; hold
// alone says that it does nothing else.
const (
	// BehaviourHold: connect and hold the connection with keepalive, nothing else.
	BehaviourHold Behaviour = "hold"
	// BehaviourPublish: publish to the group's topic on the open-loop schedule at the
	// group's rate; with a fraction below 1 only that share of the group's clients
	// publishes (the first ones by index) and the others hold.
	BehaviourPublish Behaviour = "publish"
	// BehaviourSubscribe: subscribe to the group's filters (own topic, wildcard or
	// "$share/<group>/<filter>") and receive.
	BehaviourSubscribe Behaviour = "subscribe"
	// BehaviourRoundTrip: subscribe to its own topic and publish to it: every message comes
	// back to its sender.
	BehaviourRoundTrip Behaviour = "round-trip"
	// BehaviourRequest: MQTT 5 request/response, the requesting side: publish requests to
	// the group's topic on the open-loop schedule, each carrying the client's own response
	// topic (ResponseTopic) and Correlation Data, and subscribe to that response topic.
	// Every request is expected back once per respond client (or share group) that receives
	// it, or once from a responder outside the run when no respond group does; a
	// response's latency runs from its request's due time (the round trip).
	BehaviourRequest Behaviour = "request"
	// BehaviourRespond: MQTT 5 request/response, the answering side: subscribe to the
	// group's filters and answer every message that carries a Response Topic with a
	// PUBLISH to that topic at the group's QoS, with the request's Correlation Data and
	// payload.
	BehaviourRespond Behaviour = "respond"
)

// GroupBehaviours lists every behaviour, in the order the documentation gives them.
var GroupBehaviours = []Behaviour{BehaviourHold, BehaviourPublish, BehaviourSubscribe, BehaviourRoundTrip,
	BehaviourRequest, BehaviourRespond}

// ClientGroup is one entry of a scenario's "groups": client_count clients with the same
// behaviours and settings. Its Group holds what a publisher or subscriber group of a
// plain scenario holds (id prefix, version, QoS, clean session, properties, subscription
// options); Group.Topics is the topic the group publishes to (publish, round-trip), and
// Filters what it subscribes to (subscribe). Settings left out take the run's: the
// parameters' publish_rate, payload_size and keep_alive_sec, the scenario's server.
type ClientGroup struct {
	Name       string      // "name": unique in the scenario; letters, digits, '-' and '_'
	Behaviours []Behaviour // "behaviours": a string or an array
	Group                  // the fields of a publisher or subscriber group
	Filters    []string    // "filters": the subscribe and respond behaviours' filter templates
	// ResponseTopic ("response_topic") is the request behaviour's response topic template:
	// each client's own ($clientid or $clientindex), carried on its requests and
	// subscribed to.
	ResponseTopic string
	// Fraction ("fraction") is the share of the group's clients that publish, 0 < f ≤ 1;
	// default 1. The first round(f × client_count) clients by index publish.
	Fraction    float64
	PublishRate float64 // "publish_rate": messages per second of each publishing client
	PayloadSize int     // "payload_size", the 16-byte header included
	// PayloadSizes is payload_size's distribution, if it is one (see
	// Parameters.PayloadSizes); default the parameters'.
	PayloadSizes *SizeDist
	// PayloadTemplate ("payload_template") is the group's payload template (see
	// Parameters.PayloadTemplate); default the parameters'. When set, PayloadSize is the
	// measurement bytes and its longest rendering for the group's client ids.
	PayloadTemplate string
	// PayloadFile and PayloadOrder ("payload_file", "payload_order") are the group's
	// payloads from a file (see Parameters.PayloadFile); default the parameters'.
	PayloadFile  string
	PayloadOrder string
	// Measure ("measure") is the group's measurement carrier; default the parameters'.
	Measure   Measure
	KeepAlive time.Duration // "keep_alive_sec"
	// SessionExpiry ("session_expiry_sec", MQTT 5 groups) is the session expiry interval
	// the group's clients ask for on CONNECT: how long the broker keeps a persistent
	// session (clean_session false) after its connection ends.
	SessionExpiry time.Duration
	// Start ("start_sec") delays the group's publishing from the run's start of publishing.
	Start time.Duration
	// ExpectDelivery ("expect_delivery") says that the group's messages are to reach the
	// plan's subscribing groups, whose loss is then counted; default true. False: the
	// messages are for someone outside the run (as a Publish scenario's).
	ExpectDelivery bool
	// Server ("server"), if set, is the broker of this group's clients; nil: the run's.
	Server *Server
	// Churn ("churn"), if set, is a reconnect storm of part of the group.
	Churn *Churn
	// Reconnect ("reconnect") is the group's reconnect policy when a held connection
	// drops; default the run's (parameters.reconnect).
	Reconnect Reconnect

	given uint32 // fields the file or Set gave (cgGiven* bits)
}

// Churn is a reconnect storm: at At into the run's publishing, Fraction of the group's
// clients drop their connections and connect again at once, with a clean session or the
// persistent one the group has.
type Churn struct {
	Fraction     float64       // "fraction": the share of the group's clients, 0 < f ≤ 1
	At           time.Duration // "at_sec": when, from the start of publishing
	CleanSession bool          // "clean_session": reconnect with a clean session; default the group's
	// Down ("down_sec") is how long the clients stay away before they reconnect (the
	// blip's length); 0: at once.
	Down time.Duration
	// Rate ("rate"), if above 0, makes the storm steady churn: from At to the end of the
	// run's duration (less Down, so that each is back within it), Rate of the storm's
	// clients per second drop and come back, in index
	// order, round and round (a client still away when its turn comes again is skipped);
	// Fraction then defaults to 1.
	Rate  float64
	given uint32
}

// Bits of ClientGroup.given and Churn.given.
const (
	cgGivenFraction uint32 = 1 << iota
	cgGivenRate
	cgGivenPayload
	cgGivenKeepAlive
	cgGivenSessionExpiry
	cgGivenCleanSession
	cgGivenTopics
	cgGivenFilters
	cgGivenReconnect
	cgGivenResponseTopic
	cgGivenPayloadTemplate
	cgGivenMeasure
	cgGivenPayloadFile
	cgGivenPayloadOrder
)

// Mixed reports whether the scenario lists client groups.
func (s *Scenario) Mixed() bool { return s.Groups != nil }

// has reports whether the group has behaviour b.
func (g *ClientGroup) has(b Behaviour) bool {
	for _, x := range g.Behaviours {
		if x == b {
			return true
		}
	}
	return false
}

// Publishes reports whether the group's clients (some of them) publish.
func (g *ClientGroup) Publishes() bool {
	return g.has(BehaviourPublish) || g.has(BehaviourRoundTrip) || g.has(BehaviourRequest)
}

// Subscribes reports whether the group's clients subscribe.
func (g *ClientGroup) Subscribes() bool {
	return g.has(BehaviourSubscribe) || g.has(BehaviourRoundTrip) || g.has(BehaviourRequest) || g.has(BehaviourRespond)
}

// Responds reports whether the group's clients answer requests (the respond behaviour).
func (g *ClientGroup) Responds() bool { return g.has(BehaviourRespond) }

// subscribed returns the filter templates the group's clients subscribe to: a round-trip
// client's own topic, a requester's response topic, or the group's filters.
func (g *ClientGroup) subscribed() []string {
	switch {
	case g.has(BehaviourRoundTrip):
		return g.Topics[:1]
	case g.has(BehaviourRequest):
		return []string{g.ResponseTopic}
	}
	return g.Filters
}

// Publishers returns how many of the group's clients publish: round(Fraction ×
// ClientCount), at least 1 for a publishing group, 0 for the others.
func (g *ClientGroup) Publishers() int {
	switch {
	case !g.Publishes():
		return 0
	case g.has(BehaviourRoundTrip), g.has(BehaviourRequest):
		return g.ClientCount
	}
	f := g.Fraction
	if g.given&cgGivenFraction == 0 {
		f = 1
	}
	n := int(math.Round(f * float64(g.ClientCount)))
	return min(max(n, 1), g.ClientCount)
}

// Churned returns how many of the group's clients the storm reconnects (0: no churn).
func (g *ClientGroup) Churned() int {
	if g.Churn == nil {
		return 0
	}
	f := g.Churn.Fraction
	if g.Churn.given&cgGivenFraction == 0 && g.Churn.Rate > 0 {
		f = 1
	}
	return min(max(int(math.Round(f*float64(g.ClientCount))), 1), g.ClientCount)
}

// listOf returns the first n groups of buf as a list; inlined, it takes none of the heap.
func listOf(buf *[2]ClientGroup, n int) []*ClientGroup { return []*ClientGroup{&buf[0], &buf[1]}[:n] }

// plainGroups writes into dst the client groups that a plain file's type makes of its publishers
// and subscribers and returns how many, named after them, subscribers first:
// Point-To-Point, Fan-In, Fan-Out and Shared-Subscription subscribe with the subscribers'
// topics as filters and publish; Round-Trip is one round-trip group, Connections one that
// holds, Publish one that publishes for no client of the run, Subscribe one that
// subscribes. Each takes the parameters' rate, payload size, keepalive and reconnect
// policy. A group the type has no use for is left out, and so are a missing one's. The
// groups are to be read only: they share their behaviours. (The caller holds them, so
// that validating or planning a plain file allocates none.)
func (s *Scenario) plainGroups(dst *[2]ClientGroup) int {
	p := &s.Parameters
	n := 0
	add := func(name string, g *Group, b Behaviour) *ClientGroup {
		dst[n] = ClientGroup{Name: name, Behaviours: only(b), Group: *g, Fraction: 1, PublishRate: p.PublishRate,
			PayloadSize: p.PayloadSize, KeepAlive: p.KeepAlive, Reconnect: p.Reconnect, ExpectDelivery: s.Type != TypePublish,
			PayloadTemplate: p.PayloadTemplate, Measure: p.Measure, PayloadSizes: p.PayloadSizes,
			PayloadFile: p.PayloadFile, PayloadOrder: p.PayloadOrder}
		if p.PayloadTemplate != "" {
			dst[n].PayloadSize = templateSize(p.PayloadTemplate, idLen(g), p.Measure)
		}
		n++
		return &dst[n-1]
	}
	if g := s.Subscribers; g != nil && s.Type.hasSubscribers() {
		add("subscribers", g, BehaviourSubscribe).Filters = g.Topics
	}
	if g := s.Publishers; g != nil && s.Type.hasPublishers() {
		b := BehaviourPublish
		switch s.Type {
		case TypeConnections:
			b = BehaviourHold
		case TypeRoundTrip:
			b = BehaviourRoundTrip
		}
		add("publishers", g, b)
	}
	return n
}

// behaviours holds every behaviour once, for only.
var behaviours = [...]Behaviour{BehaviourHold, BehaviourPublish, BehaviourSubscribe, BehaviourRoundTrip,
	BehaviourRequest, BehaviourRespond}

// only returns a list of behaviour b alone, without allocating; append to it copies.
func only(b Behaviour) []Behaviour {
	for i := range behaviours {
		if behaviours[i] == b {
			return behaviours[i : i+1 : i+1]
		}
	}
	panic("BUG: scenario: no behaviour " + string(b))
}

// defaultClientGroup returns the group that a "groups" entry is decoded onto.
func defaultClientGroup() *ClientGroup {
	return &ClientGroup{Group: *defaultGroup(""), Fraction: 1, ExpectDelivery: true}
}

// applyGroupDefaults fills in what each group takes from the run: its id prefix from its
// name, and the parameters' publish rate, payload size and keepalive.
func (s *Scenario) applyGroupDefaults() {
	p := &s.Parameters
	for _, g := range s.Groups {
		if g == nil {
			continue
		}
		if g.IDPrefix == "" && g.Name != "" {
			g.IDPrefix = "mqblast-" + g.Name + "-"
		}
		if g.given&cgGivenRate == 0 {
			g.PublishRate = p.PublishRate
		}
		if g.given&cgGivenPayloadTemplate == 0 {
			g.PayloadTemplate = p.PayloadTemplate
		}
		if g.given&cgGivenMeasure == 0 {
			g.Measure = p.Measure
		}
		if g.given&cgGivenPayloadFile == 0 {
			g.PayloadFile = p.PayloadFile
		}
		if g.given&cgGivenPayloadOrder == 0 {
			g.PayloadOrder = p.PayloadOrder
		}
		switch {
		case g.PayloadTemplate != "": // the template gives the size, whatever payload_size says
			g.PayloadSize = templateSize(g.PayloadTemplate, idLen(&g.Group), g.Measure)
			if g.given&cgGivenPayload == 0 {
				g.PayloadSizes = nil
			}
		case g.given&cgGivenPayload == 0:
			g.PayloadSize, g.PayloadSizes = p.PayloadSize, p.PayloadSizes
		}
		if g.given&cgGivenKeepAlive == 0 {
			g.KeepAlive = p.KeepAlive
		}
		if g.given&cgGivenFraction == 0 {
			g.Fraction = 1
		}
		if g.given&cgGivenReconnect == 0 {
			g.Reconnect = p.Reconnect
		}
		if c := g.Churn; c != nil && c.given&cgGivenCleanSession == 0 {
			c.CleanSession = g.CleanSession
		}
	}
}

func (g *ClientGroup) clone() *ClientGroup {
	c := *g
	c.Group = *g.Group.clone()
	c.Behaviours = append([]Behaviour(nil), g.Behaviours...)
	c.Filters = append([]string(nil), g.Filters...)
	if g.Server != nil {
		sv := *g.Server
		sv.Brokers = append([]string(nil), g.Server.Brokers...)
		c.Server = &sv
	}
	if g.Churn != nil {
		ch := *g.Churn
		c.Churn = &ch
	}
	return &c
}

var groupNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)

func behaviourNames() []string {
	out := make([]string, len(GroupBehaviours))
	for i, b := range GroupBehaviours {
		out[i] = string(b)
	}
	return out
}

// checkMixed checks a scenario with groups: the scenario-level fields that do not go
// with groups, then each group, then what groups do to each other.
func (s *Scenario) checkMixed(l *errList) {
	if s.Type != TypeMixed {
		l.Add("type", "%s, but a scenario with groups is Mixed (leave type out)", show(string(s.Type)))
	}
	if s.Publishers != nil {
		l.Add("publishers", "given with groups; a mixed scenario's clients are its groups (move them into a group)")
	}
	if s.Subscribers != nil {
		l.Add("subscribers", "given with groups; a mixed scenario's clients are its groups (move them into a group)")
	}
	if len(s.Groups) == 0 {
		l.Add("groups", "empty (want at least one client group)")
		return
	}
	if len(s.Groups) > MaxGroups {
		l.Add("groups", "%d groups, more than a run holds (max %d)", len(s.Groups), MaxGroups)
	}
	msgs := s.mixedMessages()
	s.checkParameters(l, msgs)
	if len(s.Parameters.Stages) > 0 {
		l.Add("parameters.stages", "given with groups; a mixed scenario's rates are its groups' publish_rate (leave stages out)")
	}
	s.checkServer(l)
	s.checkThresholds(l)
	names := map[string]int{}
	total := 0
	for i, g := range s.Groups {
		path := fmt.Sprintf("groups[%d]", i)
		if g == nil {
			continue
		}
		if j, dup := names[g.Name]; dup && g.Name != "" {
			l.Add(path+".name", "%s is also the name of groups[%d] (names must be unique)", show(g.Name), j)
		} else {
			names[g.Name] = i
		}
		s.checkClientGroup(l, path, g)
		total += max(g.ClientCount, 0)
	}
	if total > maxClients {
		l.Add("groups", "%d clients in all, more than one plan holds (max %d)", total, maxClients)
	}
	// Client ids: an id_prefix that begins another group's makes ids that a broker's prefix
	// rules (ACLs, bridges) cannot tell apart, and may collide; ids a client_id template
	// gives are refused when they may meet another group's (idForm.overlaps).
	for i, a := range s.Groups {
		for j, b := range s.Groups {
			if a == nil || b == nil || i == j {
				continue
			}
			af, bf := a.ids(), b.ids()
			path, v := s.idSource(fmt.Sprintf("groups[%d].", j), &b.Group)
			apath, av := s.idSource(fmt.Sprintf("groups[%d].", i), &a.Group)
			if strings.HasSuffix(path, "id_prefix") && strings.HasSuffix(apath, "id_prefix") {
				if a.IDPrefix != "" && b.IDPrefix != "" && strings.HasPrefix(b.IDPrefix, a.IDPrefix) && (len(a.IDPrefix) < len(b.IDPrefix) || i < j) {
					l.Add(fmt.Sprintf("groups[%d].id_prefix", j), "%s overlaps groups[%d].id_prefix %s (one is a prefix of the other); give each group a prefix of its own",
						show(b.IDPrefix), i, show(a.IDPrefix))
				}
				continue
			}
			if i < j && af.overlaps(bf) {
				l.Add(path, "%s may give ids that groups[%d] (%s) gives too: the text before and after the index does not tell them apart; give each group ids of its own (e.g. with $groupindex)",
					show(v), i, show(av))
			}
		}
	}
	if len(l.Errs) == 0 {
		s.checkReach(l, s.Groups, func(i int) groupAt { return entryAt(fmt.Sprintf("groups[%d]", i), s.Groups[i]) })
	}
}

// mixedMessages reports whether some group publishes.
func (s *Scenario) mixedMessages() bool {
	for _, g := range s.Groups {
		if g != nil && g.Publishes() {
			return true
		}
	}
	return false
}

// checkClientGroup checks a "groups" entry: the fields a plain file's publishers and
// subscribers do not have (name, behaviours, reconnect, server, churn) around the rules of
// every group (checkGroup).
func (s *Scenario) checkClientGroup(l *errList, path string, g *ClientGroup) {
	if g.Reconnect != ReconnectOff && g.Reconnect != ReconnectBackoff {
		l.Add(path+".reconnect", "%s is not a reconnect policy (want \"off\" or \"backoff\")", show(string(g.Reconnect)))
	}
	switch {
	case g.Name == "":
		l.Add(path+".name", "missing (want a name such as \"devices\")")
	case !groupNameRE.MatchString(g.Name) || len(g.Name) > 64:
		l.Add(path+".name", "%s is not a group name (want letters, digits, '-' and '_', at most 64)", show(g.Name))
	}
	// Behaviours.
	seen := map[Behaviour]bool{}
	for k, b := range g.Behaviours {
		bp := path + ".behaviours"
		if len(g.Behaviours) > 1 {
			bp = fmt.Sprintf("%s[%d]", bp, k)
		}
		switch {
		case !b.known():
			l.Add(bp, "%s is not a behaviour (want %s)%s", show(string(b)), strings.Join(behaviourNames(), ", "),
				suggest(string(b), behaviourNames()))
		case seen[b]:
			l.Add(bp, "%s is listed twice", show(string(b)))
		}
		seen[b] = true
	}
	switch {
	case len(g.Behaviours) == 0:
		l.Add(path+".behaviours", "missing (want some of %s)", strings.Join(behaviourNames(), ", "))
	case seen[BehaviourHold] && len(g.Behaviours) > 1:
		l.Add(path+".behaviours", "hold goes alone (a group that publishes or subscribes holds its connections too)")
	case seen[BehaviourRoundTrip] && len(g.Behaviours) > 1:
		l.Add(path+".behaviours", "round-trip goes alone (its clients publish to and subscribe to their own topic)")
	case seen[BehaviourRequest] && len(g.Behaviours) > 1:
		l.Add(path+".behaviours", "request goes alone (its clients publish requests and subscribe to their response topic)")
	case seen[BehaviourRespond] && len(g.Behaviours) > 1:
		l.Add(path+".behaviours", "respond goes alone (its clients subscribe to filters and answer the requests they receive)")
	}
	if (seen[BehaviourRequest] || seen[BehaviourRespond]) && g.ProtocolVersion != V5 {
		l.Add(path+".protocol_version", "MQTT %s, but request and respond use MQTT 5's Response Topic and Correlation Data (want 5)", g.ProtocolVersion)
	}
	s.checkGroup(l, entryAt(path, g), g)
	gp := path + "."
	if !g.Publishes() && !g.Subscribes() && g.QoS != 0 {
		l.Add(gp+"qos", "%d, but the group neither publishes nor subscribes (hold: leave qos out)", g.QoS)
	}
	if g.Server != nil {
		sv := g.Server
		if !sv.namesBroker() && !sv.hasCredentials() && !sv.ClientCert.Given() {
			l.Add(gp+"server.hostname", "missing (a group's server names its broker, or gives its clients' username and password "+
				"or TLS certificate; leave server out for the run's)")
		}
		checkClientCert(l, gp+"server.", sv.ClientCert)
		if sv.namesBroker() && sv.ClientCert.Given() {
			l.Add(gp+"server.cert", "a group's own server is plain MQTT over TCP, which has no client certificate: "+
				"give the certificate without hostname and brokers, for the run's TLS brokers")
		}
		switch {
		case len(sv.Brokers) > 0 && sv.Hostname != "":
			l.Add(gp+"server.hostname", "%s given with server.brokers, which replace it (give one of them)", show(sv.Hostname))
		case sv.given&svGivenPort != 0 && len(sv.Brokers) > 0:
			l.Add(gp+"server.port", "%d given with server.brokers, whose entries carry their ports (leave port out)", sv.Port)
		case sv.given&svGivenPort != 0 && !sv.namesBroker() && (sv.hasCredentials() || sv.ClientCert.Given()):
			l.Add(gp+"server.port", "%d given without server.hostname (give the host too, or leave port out for the run's broker)", sv.Port)
		case len(sv.Brokers) == 0 && (sv.Port < 1 || sv.Port > 65535):
			l.Add(gp+"server.port", "%d is not a port (must be 1 to 65535)", sv.Port)
		}
		if sv.Path != "" {
			l.Add(gp+"server.path", "%s: a group's own server is plain MQTT over TCP, which has no path (leave it out)", show(sv.Path))
		}
		for i, b := range sv.Brokers {
			if _, err := parseBroker(b); err != nil {
				l.Add(fmt.Sprintf("%sserver.brokers[%d]", gp, i), "%s %v", show(b), err)
			}
		}
		if sv.Scheme != "" && sv.Scheme != "mqtt" {
			l.Add(gp+"server.scheme", "%s: a group's own server is plain MQTT over TCP (want \"mqtt\" or leave it out)", show(sv.Scheme))
		}
	}
	if c := g.Churn; c != nil {
		cp := gp + "churn."
		switch {
		case c.given&cgGivenRate != 0 && !(c.Rate > 0 && c.Rate <= 1e6):
			l.Add(cp+"rate", "%s is not a churn rate (want clients per second, more than 0, at most 1000000)", show(c.Rate))
		case c.given&cgGivenFraction == 0 && c.given&cgGivenRate != 0:
			// steady churn over the whole group
		case c.given&cgGivenFraction == 0:
			l.Add(cp+"fraction", "missing (want the share of the group that reconnects, e.g. 0.1, or a rate of clients per second)")
		case !(c.Fraction > 0):
			l.Add(cp+"fraction", "%s is not a fraction of the group (want more than 0, at most 1)", show(c.Fraction))
		case c.Fraction > 1:
			l.Add(cp+"fraction", "%s is a storm larger than the group (%d clients; want at most 1)", show(c.Fraction), g.ClientCount)
		}
		d := s.Parameters.Duration
		switch {
		case c.At <= 0 || (d > 0 && c.At >= d):
			l.Add(cp+"at_sec", "%s is not a time within the run (want 0 < at_sec < duration_sec %s)", show(c.At), show(d))
		case c.Down < 0 || (d > 0 && c.At+c.Down >= d):
			l.Add(cp+"down_sec", "%s does not end within the run (want 0 ≤ down_sec < duration_sec %s - at_sec %s)", show(c.Down), show(d), show(c.At))
		}
	}
}

// requestTopic returns client j's request topic, expanded.
func requestTopic(g *ClientGroup, j int) string {
	t := compileTemplate(g.Topics[0])
	return t.expand(j, g.ids())
}

func (b Behaviour) known() bool {
	for _, k := range GroupBehaviours {
		if b == k {
			return true
		}
	}
	return false
}
