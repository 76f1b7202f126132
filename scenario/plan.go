package scenario

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/mqblast/mqblast/internal/payloadtpl"
)

// Role is what a client does in a run.
type Role byte

// Roles of clients.
const (
	// RoleIdle connects and holds its connection (Connections scenarios).
	RoleIdle Role = iota + 1
	// RolePublisher publishes to its topic on a schedule.
	RolePublisher
	// RoleSubscriber subscribes to its filters and receives.
	RoleSubscriber
	// RoleRoundTrip subscribes to its own topic and publishes to it (Round-Trip).
	RoleRoundTrip
	// RolePubSub publishes to its topic and subscribes to its group's filters (a mixed
	// scenario's group with both the publish and the subscribe behaviour).
	RolePubSub
	// RoleRequester publishes requests that carry its own response topic and subscribes to
	// that topic (a mixed scenario's request group).
	RoleRequester
)

// String returns "idle", "publisher", "subscriber" or "round-trip".
func (r Role) String() string {
	switch r {
	case RoleIdle:
		return "idle"
	case RolePublisher:
		return "publisher"
	case RoleSubscriber:
		return "subscriber"
	case RoleRoundTrip:
		return "round-trip"
	case RolePubSub:
		return "publisher-subscriber"
	case RoleRequester:
		return "requester"
	}
	return "Role(" + strconv.Itoa(int(r)) + ")"
}

// Publishes reports whether clients of role r publish.
func (r Role) Publishes() bool {
	return r == RolePublisher || r == RoleRoundTrip || r == RolePubSub || r == RoleRequester
}

// Subscribes reports whether clients of role r subscribe.
func (r Role) Subscribes() bool {
	return r == RoleSubscriber || r == RoleRoundTrip || r == RolePubSub || r == RoleRequester
}

// Client is one client of a plan, derived from its index on demand (Plan.Client).
type Client struct {
	Role Role
	// GroupName is the group of the scenario file: "publishers" or "subscribers", or a
	// mixed scenario's group name; GroupID is the group's index in Scenario.Groups (0 in a
	// plain scenario).
	GroupName string
	GroupID   int
	Group     *Group // the group's settings (version, QoS, clean session, properties); shared, read-only
	Index     int    // 0-based index in its group; the same in every shard
	ID        string // client id: the group's id_prefix (or client_id's text) + Index
	// Number is the publisher number its messages carry (the measurement header), unique in
	// the plan: Index in a plain scenario; in a mixed one the publishers of the groups are
	// numbered one group after the other.
	Number uint32
	// KeepAlive and PayloadSize are its group's (a plain scenario's parameters').
	KeepAlive   time.Duration
	PayloadSize int
	// PayloadTemplate is its group's payload template, compiled (nil: none; shared,
	// read-only); PayloadTemplates its payload file's payloads, each a template (nil:
	// none), taken in turn or, PayloadRandom, at random.
	PayloadTemplate  *payloadtpl.Template
	PayloadTemplates []*payloadtpl.Template
	PayloadRandom    bool
	// Measure is its group's measurement carrier ("" or MeasureHeader: the header).
	Measure Measure
	// PayloadSizes is its group's distribution of payload sizes (nil: PayloadSize each).
	PayloadSizes *SizeDist
	// OwnBroker indexes Plan.OwnBrokers for a client of a group with its own server; -1
	// for the others, whose broker is Broker.
	OwnBroker int
	Topic     string // the topic it publishes to, expanded; "" if it does not publish
	// Topics, when it publishes to more than one topic, are the topics it cycles over,
	// expanded (Topic is the first): its message with sequence number n goes to
	// Topics[n mod len(Topics)], and the broker should deliver TopicReceivers[n mod
	// len(Topics)] copies of it (the topics may reach different receivers).
	Topics         []string
	TopicReceivers []int
	Filters        []string
	// ResponseTopic is a requester's own response topic, expanded: its requests carry it
	// and it subscribes to it; "" for the other roles.
	ResponseTopic string
	// Respond says that it answers the requests it receives (a respond group's client).
	Respond bool
	// Rate is the messages per second it publishes; 0 if it does not publish.
	Rate float64
	// Phase is the offset of its first message from the start of publishing: publisher k of
	// P is due at Phase + n/Rate with Phase = k/P/Rate, so that the P schedules interleave
	// and the aggregate rate is smooth (of arrival "burst", k/P of a burst's interval, so
	// that the bursts interleave; of arrival "poisson", message 0 is due at Phase and the
	// gaps are drawn).
	Phase time.Duration
	// Receivers is how many copies of each of its messages the broker should deliver: one
	// per subscriber with a matching filter, one per share group with a matching shared
	// filter. 0 if it does not publish, and 0 in a Publish scenario, whose messages no
	// client of the plan receives. Of a client that cycles over topics, its first topic's
	// (TopicReceivers has each one's).
	Receivers int
	// Source indexes the plan's source addresses (Plan.Source): clients take them
	// round-robin in plan order; -1 when the scenario binds none.
	Source int
	// Broker indexes Plan.Brokers: clients of a multi-broker server are spread over them
	// round-robin by their position in the whole plan; 0 otherwise.
	Broker int
	// Username and Password are what it sends on CONNECT: its group's own server's when
	// that gives either, else the run's (server.username and server.password), each a
	// template expanded for it ($clientid, $clientindex, $groupindex); a credentials file's
	// username and password columns replace them. Rendered at each call, not kept.
	Username, Password string
	// ClientCert is where its TLS certificate comes from: its group's own server's when
	// that gives one, else the scenario's (shared, read-only; nil: neither gives one).
	ClientCert *ClientCert
}

// Plan is a scenario expanded into clients: its groups one after the other, in file order
// (a plain file's subscribers before its publishers, so that they are connected and
// subscribed before publishers start), a publishing group's publishers before its other
// clients. It stores only ranges of client indices and the compiled templates; each Client
// is derived from its index when asked for, so a plan of a million clients takes a few
// kilobytes. A Plan is immutable and safe for concurrent use.
type Plan struct {
	segs   []segment
	n      int
	shared *planShared
	// connRate and connDelay are a Part's turn at dialing (connRate 0: the plan dials at
	// its share of the rate from the start).
	connRate  float64
	connDelay time.Duration
}

// segment is a contiguous range of one group's clients of one role.
type segment struct {
	role   Role
	gid    int // the group's index in planShared.groups
	lo, hi int // group indices [lo, hi)
	base   int // position of the group's index 0 in the whole plan
}

// planShared is what the shards of one plan have in common: the scenario's groups (a file's
// "groups", or those a plain file's type makes: plainGroups) and what each takes to derive
// its clients.
type planShared struct {
	s      *Scenario
	g      []planGroup    // each group, the plan's own copy, and what the plan derives of it
	groups []*ClientGroup // each group: &g[gid].ClientGroup
	m      *matcher

	sources          sourceSet
	brokers          []string
	ownBrokers       []string // the groups' own servers, "host:port"
	whole            int      // clients of the whole plan
	wholeSubscribing int

	// plain is the type of a plain file (publishers, subscribers and a type rather than
	// groups), "" for a file with groups. Such a plan keeps a few figures of that form: it
	// reports no groups (Groups, GroupTables, a client's GroupID: its result has no
	// groups[] and its recorder looks no group up), a Subscribe plan is Open, a
	// Connections plan counts its clients as Publishers, its shared filters' streams are
	// numbered by filter (matcher.byFilter), and its estimate sizes the copies delivered by
	// the receiving group's settings (copyAs).
	plain Type
	// copyAs is the group whose QoS (with the publishers'), version and buffers size the
	// copies a plain file's broker delivers: its subscribers, or its publishers for a
	// Round-Trip or Publish file; nil for a file with groups, whose copies are sized by
	// their publishers' settings.
	copyAs *Group

	once sync.Once // counts the groups' deliveries (planGroup.deliv)
}

// planGroup is one of a plan's groups, the plan's own copy, and what the plan derives of it.
type planGroup struct {
	ClientGroup
	// conf is its clients' connection settings: the group's, or a copy with the session
	// expiry among the CONNECT properties.
	conf *Group

	pub template // the topic it publishes to (zero for a group that does not publish)
	// cycle are the topics its publishers cycle over, pub first, when more than one (nil
	// otherwise); each reaches its own receivers, a client on one stream (validated).
	cycle   []template
	payload *payloadtpl.Template   // its payload template (nil: none)
	files   []*payloadtpl.Template // its payload file's payloads (nil: none)
	resp    template               // a request group's response topic (zero for the others)
	pubBase int                    // its first publisher number
	pubs    int                    // its publishers
	sub     int                    // its index in matcher.subs, -1 if it does not subscribe
	own     int                    // its first index in ownBrokers, -1: the run's brokers
	ownN    int
	cred    *Server // where its clients' username and password are: its own server's, or the run's
	ident   groupIdentity
	cert    *Server // where its clients' TLS certificate comes from: its own server's, or the run's (nil: none)
	deliv   float64 // its messages' deliveries per second, whole plan (countDeliveries)
}

// NewPlan validates s (see Validate) and expands it. The plan keeps its own copy of s. Bind
// entries that name interfaces must have been resolved (SetBind) before.
func NewPlan(s *Scenario) (*Plan, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	s = s.Clone()
	sh := &planShared{s: s}
	var err error
	if sh.sources, err = newSourceSet(s.Parameters.Bind); err != nil {
		if errors.Is(err, errInterface) {
			err = fmt.Errorf("%w; resolve interface names to addresses (SetBind) first", err)
		}
		return nil, &Error{File: s.file, Path: "parameters.bind", Msg: err.Error()}
	}
	switch {
	case len(s.Server.Brokers) > 0:
		sh.brokers = s.Server.Brokers
	case s.Server.Hostname != "":
		sh.brokers = []string{s.Server.serverAddr()}
	}
	p := &Plan{shared: sh}
	groups := s.Groups
	var buf [2]ClientGroup // layOut copies the groups
	if !s.Mixed() {
		sh.plain = s.Type
		groups = listOf(&buf, s.plainGroups(&buf))
	}
	p.layOut(groups)
	for gid := range sh.g {
		pg := &sh.g[gid]
		if pg.pubs == 0 || pg.PayloadFile == "" {
			continue
		}
		ts, err := loadPayloads(pg.PayloadFile)
		if err != nil { // changed since Validate read it
			path := "parameters.payload_file"
			if s.Mixed() {
				path = fmt.Sprintf("groups[%d].payload_file", gid)
			}
			return nil, &Error{File: s.file, Path: path, Msg: err.Error()}
		}
		pg.files = ts
		pg.PayloadSize, pg.PayloadSizes = payloadsSize(ts, idLen(&pg.Group), pg.Measure), nil
	}
	return p, nil
}

// layOut takes copies of the groups and lays them out as segments: each group in order, a
// publishing group's publishers (the first of its clients) before its other clients.
func (p *Plan) layOut(groups []*ClientGroup) {
	sh := p.shared
	sh.g = make([]planGroup, len(groups))
	sh.groups = make([]*ClientGroup, len(groups))
	for gid, g := range groups {
		sh.g[gid].ClientGroup = *g
		sh.groups[gid] = &sh.g[gid].ClientGroup
		if g.Measure == MeasureNone { // unmeasured copies: none expected, so none lost
			sh.groups[gid].ExpectDelivery = false
		}
	}
	sh.m = newMatcher(sh.groups, sh.plain != "")
	number := 0
	for gid, g := range sh.groups {
		pg := &sh.g[gid]
		pg.conf = &g.Group
		if g.given&cgGivenSessionExpiry != 0 {
			conf := g.Group
			conf.ConnectProperties = append(append([]Property(nil), g.ConnectProperties...),
				Property{Name: "session_expiry_interval", ID: 0x11, Num: uint32(g.SessionExpiry / time.Second)})
			pg.conf = &conf
		}
		if g.Publishes() {
			pg.pub = compileTemplate(g.Topics[0])
			if cycle, _ := topicCycle(g.Topics); len(cycle) > 1 {
				for _, raw := range cycle {
					pg.cycle = append(pg.cycle, compileTemplate(raw))
				}
				pg.pub = pg.cycle[0]
			}
			pg.payload = compilePayload(g.PayloadTemplate)
		}
		if g.has(BehaviourRequest) {
			pg.resp = compileTemplate(g.ResponseTopic)
		}
		np := g.Publishers()
		pg.pubBase, pg.pubs = number, np
		number += np
		pg.sub = -1
		for k := range sh.m.subs {
			if sh.m.subs[k].gid == gid {
				pg.sub = k
			}
		}
		pg.own = -1
		pg.cred = &sh.s.Server
		if sv := g.Server; sv != nil && sv.hasCredentials() {
			pg.cred = sv
		}
		pg.ident = sh.s.newGroupIdentity(gid, g, pg.cred)
		pg.cert = nil
		if sh.s.Server.ClientCert.Given() {
			pg.cert = &sh.s.Server
		}
		if sv := g.Server; sv != nil && sv.ClientCert.Given() {
			pg.cert = sv
		}
		if sv := g.Server; sv != nil && sv.namesBroker() {
			addrs := sv.Brokers
			if len(addrs) == 0 {
				addrs = []string{sv.serverAddr()}
			}
			pg.own, pg.ownN = len(sh.ownBrokers), len(addrs)
			sh.ownBrokers = append(sh.ownBrokers, addrs...)
		}
		pubRole, restRole := RoleIdle, RoleIdle
		switch {
		case g.has(BehaviourRoundTrip):
			pubRole = RoleRoundTrip
		case g.has(BehaviourRequest):
			pubRole = RoleRequester
		case g.has(BehaviourRespond):
			restRole = RoleSubscriber
		case g.has(BehaviourPublish) && g.has(BehaviourSubscribe):
			pubRole, restRole = RolePubSub, RoleSubscriber
		case g.has(BehaviourPublish):
			pubRole = RolePublisher
		case g.has(BehaviourSubscribe):
			restRole = RoleSubscriber
		}
		base := p.n
		if np > 0 {
			p.segs = append(p.segs, segment{role: pubRole, gid: gid, hi: np, base: base})
		}
		if np < g.ClientCount {
			p.segs = append(p.segs, segment{role: restRole, gid: gid, lo: np, hi: g.ClientCount, base: base})
		}
		if g.Subscribes() {
			sh.wholeSubscribing += g.ClientCount
		}
		p.n += g.ClientCount
	}
	sh.whole = p.n
	switch {
	case sh.plain == "" || len(groups) == 0:
	case len(sh.m.subs) > 0:
		sh.copyAs = sh.g[sh.m.subs[0].gid].conf
	default:
		sh.copyAs = sh.g[len(groups)-1].conf // a Publish file's publishers
	}
}

// Scenario returns the validated scenario the plan was made from. Do not modify it.
func (p *Plan) Scenario() *Scenario { return p.shared.s }

// Len returns the number of clients in the plan.
func (p *Plan) Len() int { return p.n }

// Client returns client i of the plan, 0 ≤ i < Len(). Each call builds the client's id,
// topic and filters anew.
func (p *Plan) Client(i int) Client {
	if i < 0 || i >= p.n {
		panic(fmt.Sprintf("scenario: Client(%d) out of range [0, %d)", i, p.n))
	}
	off := i
	var seg *segment
	for k := range p.segs {
		seg = &p.segs[k]
		if off < seg.hi-seg.lo {
			break
		}
		off -= seg.hi - seg.lo
	}
	sh := p.shared
	j := seg.lo + off
	g, pg := sh.groups[seg.gid], &sh.g[seg.gid]
	c := Client{
		Role:        seg.role,
		GroupName:   g.Name,
		GroupID:     sh.reported(seg.gid),
		Group:       pg.conf,
		Index:       j,
		ID:          g.ID(j),
		Source:      -1,
		OwnBroker:   -1,
		KeepAlive:   g.KeepAlive,
		PayloadSize: g.PayloadSize,
		Respond:     g.Responds(),
	}
	c.Username, c.Password = pg.ident.credentials(j, g.ids())
	if pg.cert != nil {
		c.ClientCert = &pg.cert.ClientCert
	}
	if seg.role.Publishes() {
		c.Number = uint32(pg.pubBase + j)
		c.PayloadTemplate, c.Measure, c.PayloadSizes = pg.payload, g.Measure, g.PayloadSizes
		c.PayloadTemplates, c.PayloadRandom = pg.files, g.PayloadOrder == OrderRandom
		c.Topic = pg.pub.expand(j, g.ids())
		if len(pg.cycle) > 1 {
			c.Topics = make([]string, len(pg.cycle))
			for k := range pg.cycle {
				c.Topics[k] = pg.cycle[k].expand(j, g.ids())
			}
		}
		c.Rate = g.PublishRate
		c.Phase = g.Start + time.Duration(float64(j)/float64(pg.pubs)/g.PublishRate*float64(time.Second))
		if g.Arrival == ArrivalBurst { // the bursts interleave over a burst's interval
			c.Phase = g.Start + time.Duration(float64(j)/float64(pg.pubs)*float64(g.BurstSize)/g.PublishRate*float64(time.Second))
		}
		if g.ExpectDelivery {
			c.Receivers = sh.m.deliveries(c.Topic)
			if seg.role == RoleRequester {
				c.Receivers += max(sh.m.responses(c.Topic), 1) // none here: a responder outside answers
			}
			if len(c.Topics) > 1 { // a request group publishes to one topic
				c.TopicReceivers = make([]int, len(c.Topics))
				for k, t := range c.Topics {
					c.TopicReceivers[k] = sh.m.deliveries(t)
				}
			}
		}
	}
	switch seg.role {
	case RoleRoundTrip:
		c.Filters = []string{c.Topic}
	case RoleRequester:
		c.ResponseTopic = pg.resp.expand(j, g.ids())
		c.Filters = []string{c.ResponseTopic}
	case RoleSubscriber, RolePubSub:
		sg := &sh.m.subs[pg.sub]
		c.Filters = make([]string, len(sg.filters))
		for k := range sg.filters {
			c.Filters[k] = sg.filters[k].expand(j, g.ids())
		}
	}
	if sh.sources.total > 0 {
		c.Source = i % sh.sources.total
	}
	switch {
	case pg.own >= 0:
		c.OwnBroker = pg.own + j%pg.ownN
	case len(sh.brokers) > 1:
		c.Broker = (seg.base + j) % len(sh.brokers)
	}
	return c
}

// Shard returns shard i of n (0 ≤ i < n): a contiguous slice of each group, so that the n
// shards are disjoint, their union is p, and a group's clients are spread evenly over them.
// Client ids, topics, phases and broker indices are those of p; source addresses are taken
// round-robin within the shard, as each shard runs on its own addresses. Shard panics if
// i or n is out of range.
func (p *Plan) Shard(i, n int) *Plan {
	if n < 1 || i < 0 || i >= n {
		panic(fmt.Sprintf("scenario: Shard(%d, %d) out of range", i, n))
	}
	q := &Plan{shared: p.shared}
	for _, seg := range p.segs {
		c := int64(seg.hi - seg.lo)
		lo := seg.lo + int(c*int64(i)/int64(n))
		hi := seg.lo + int(c*int64(i+1)/int64(n))
		if hi > lo {
			seg.lo, seg.hi = lo, hi
			q.segs = append(q.segs, seg)
			q.n += hi - lo
		}
	}
	return q
}

// MaxShards returns the most shards the plan splits into (Shard) with a client in each:
// its largest group's size, as Shard cuts every group evenly.
func (p *Plan) MaxShards() int {
	most := 0
	for _, seg := range p.segs {
		most = max(most, seg.hi-seg.lo)
	}
	return most
}

// Part returns part i of n of the plan (0 ≤ i < n), the clients Shard(i, n) returns, for
// one of n worker processes on one host, with its turn at dialing: the parts take turns in
// lanes (at most lanes of them dialing at once), each lane dialing its parts one after the
// other at its share of the plan's connect rate, so that every lane ends with the plan's
// connect phase and the host dials at the plan's rate throughout. A part that dialed at
// 1/n of the rate the whole phase long (a million connections at 5,000/s in 51 processes:
// 98 a second each) would pay a thread's wake for every few dials. The order of the dials
// within a part is the plan's. With lanes ≥ n or no connect rate, it is Shard(i, n).
func (p *Plan) Part(i, n, lanes int) *Plan {
	q := p.Shard(i, n)
	rate := p.ConnectRate()
	if lanes >= n || lanes < 1 || !(rate > 0) || p.n == 0 {
		return q
	}
	before, lane := 0, 0
	for j := i % lanes; j < n; j += lanes {
		k := p.Shard(j, n).Len()
		if j < i {
			before += k
		}
		lane += k
	}
	q.connRate = rate * float64(lane) / float64(p.n)
	q.connDelay = time.Duration(float64(before) / q.connRate * float64(time.Second))
	return q
}

// ConnectRate returns the connections per second of this plan: the scenario's
// connection_rate, which is for the whole run, in proportion to this shard's clients, or
// a Part's lane's rate.
func (p *Plan) ConnectRate() float64 {
	if p.connRate > 0 {
		return p.connRate
	}
	return p.shared.s.Parameters.ConnectionRate * float64(p.n) / float64(p.shared.whole)
}

// ConnectDelay returns how long after the connect phase's start a Part's first dial is
// due (its turn; 0 for a plan or shard).
func (p *Plan) ConnectDelay() time.Duration { return p.connDelay }

// Brokers returns the "host:port" of each broker; nil when the scenario names none (run
// then starts the embedded broker).
func (p *Plan) Brokers() []string { return p.shared.brokers }

// Sources returns the number of source addresses of the plan (parameters.bind), 0 if none.
func (p *Plan) Sources() int { return p.shared.sources.total }

// Source returns source address k, 0 ≤ k < Sources().
func (p *Plan) Source(k int) netip.Addr { return p.shared.sources.addr(k) }

// Estimate is the size of a plan: what the host checks (tuning) and the run need to know
// before any socket opens. Rates assume every client is connected and publishing on
// schedule; memory figures are rough upper bounds from the constants below.
type Estimate struct {
	Clients         int // clients of the plan
	Publishers      int // clients that publish (Round-Trip clients count here and below)
	Subscribers     int // clients that subscribe
	Connections     int // MQTT connections: one per client
	FileDescriptors int // Connections plus the process's own (FDOverhead)
	Topics          int // distinct topics the plan's publishers publish to
	// PublishPerSec is the messages per second the clients publish (out).
	PublishPerSec float64
	// ReceivePerSec is the messages per second the broker delivers to the clients (in),
	// assuming the deliveries spread evenly over the subscribing clients. It is 0 for
	// Subscribe scenarios, whose publishers are not part of the plan: what they receive is
	// not known in advance.
	ReceivePerSec float64
	// BytesOutPerSec and BytesInPerSec are MQTT bytes per second written and read by the
	// clients: PUBLISH packets and their acknowledgements (TCP/IP headers not included).
	BytesOutPerSec float64
	BytesInPerSec  float64
	// MemoryBytes is the host memory the run takes besides socket buffers: the mqblast
	// process and the kernel's per-socket structures (socket, file, epoll item).
	MemoryBytes int64
	// SocketMemoryBytes is the kernel socket buffer memory of the plan's connections, the
	// memory net.ipv4.tcp_mem counts.
	SocketMemoryBytes int64
	// ConnectTime is how long opening every connection takes at ConnectRate.
	ConnectTime time.Duration
	// SourceAddresses is the number of source addresses (parameters.bind), 0 if none.
	SourceAddresses int
}

// Constants of the memory model of Estimate.
const (
	// FDOverhead is the file descriptors the process holds besides its connections: stdio,
	// epoll and eventfd per event loop, the result and log files, an embedded broker.
	FDOverhead = 64
	// MemoryBase is the process's memory without connections: runtime, binary, one
	// HdrHistogram set per event loop.
	MemoryBase = 64 << 20
	// MemoryPerConnection is the memory of one idle connection besides its buffers, with
	// room to spare: session state in the process (about 250 B measured by make
	// bench-conn), socket, file, tcp_sock and epoll structures in the kernel (about 4 KiB).
	MemoryPerConnection = 8 << 10
	// SocketMemoryPerConnection is the socket buffer memory of one connection: about a page
	// in flight.
	SocketMemoryPerConnection = 4 << 10
	// inflightEntry is the memory of one in-flight QoS 1/2 message (packet id, due time).
	inflightEntry = 32
)

// Estimate returns the size of the plan. The first call on any shard of a plan counts the
// deliveries of every publisher of the whole plan, which takes a few hundred nanoseconds per
// publisher; later calls are cheap.
func (p *Plan) Estimate() Estimate {
	sh := p.shared
	e := Estimate{
		Clients:         p.n,
		Connections:     p.n,
		FileDescriptors: p.n + FDOverhead,
		SourceAddresses: sh.sources.total,
	}
	if r := p.ConnectRate(); r > 0 {
		e.ConnectTime = p.connDelay + time.Duration(float64(p.n)/r*float64(time.Second))
	}
	subscribing := 0
	for _, seg := range p.segs {
		n := seg.hi - seg.lo
		if seg.role.Publishes() {
			e.Publishers += n
		}
		if seg.role.Subscribes() {
			e.Subscribers += n
			subscribing += n
		}
	}
	e.MemoryBytes = MemoryBase + int64(p.n)*MemoryPerConnection
	e.SocketMemoryBytes = int64(p.n) * SocketMemoryPerConnection
	sh.once.Do(sh.countDeliveries)
	// Acknowledgements are 4 bytes each: PUBACK for QoS 1; PUBREC, PUBREL, PUBCOMP for QoS 2
	// (the publisher writes PUBREL, the receiver PUBREC and PUBCOMP).
	const ack = 4
	for _, seg := range p.segs {
		if !seg.role.Publishes() {
			continue
		}
		g := sh.groups[seg.gid]
		n := seg.hi - seg.lo
		switch pg := &sh.g[seg.gid]; {
		case len(pg.cycle) > 1:
			for k := range pg.cycle {
				e.Topics += pg.cycle[k].distinct(n)
			}
		case pg.pub.indexed:
			e.Topics += pg.pub.distinct(n)
		default:
			e.Topics = max(e.Topics, 1)
		}
		rate := float64(n) * g.PublishRate
		e.PublishPerSec += rate
		out := sh.publishSize(seg.gid)
		e.BytesOutPerSec += rate * float64(out)
		switch g.QoS {
		case 1:
			e.BytesInPerSec += rate * ack
		case 2:
			e.BytesInPerSec += rate * 2 * ack
			e.BytesOutPerSec += rate * ack
		}
		if g.QoS > 0 {
			// In flight: a second's worth of messages (acks slower than that mean an
			// overloaded broker), at most max_inflight_messages.
			inflight := min(int64(sh.s.Parameters.MaxInflight), int64(math.Ceil(g.PublishRate)))
			e.MemoryBytes += int64(n) * inflight * inflightEntry
		}
		// One packet of buffer per direction for the connections whose packets exceed the
		// idle allowance, in the process and in the kernel.
		if big := int64(out + g.PayloadSize - g.meanPayload()); big > 1<<10 && sh.copyAs == nil { // the largest
			e.MemoryBytes += int64(n) * 2 * big
			e.SocketMemoryBytes += int64(n) * 2 * big
		}
	}
	// What the broker delivers to this plan's subscribing clients, the copies of each
	// publishing group's messages.
	for gid := range sh.g {
		pg := &sh.g[gid]
		if pg.pubs == 0 {
			continue
		}
		size, qos := sh.copySize(gid)
		// The largest packet, not the mean one of a distribution of sizes.
		if big := int64(max(sh.publishSize(gid), size) + sh.groups[gid].PayloadSize - sh.groups[gid].meanPayload()); big > 1<<10 && sh.copyAs != nil {
			// A plain file's clients each buffer its largest packet.
			e.MemoryBytes += int64(p.n) * 2 * big
			e.SocketMemoryBytes += int64(p.n) * 2 * big
		}
		if pg.deliv == 0 || sh.wholeSubscribing == 0 {
			continue
		}
		d := pg.deliv * float64(subscribing) / float64(sh.wholeSubscribing)
		e.ReceivePerSec += d
		e.BytesInPerSec += d * float64(size)
		switch qos {
		case 1:
			e.BytesOutPerSec += d * ack
		case 2:
			e.BytesOutPerSec += d * 2 * ack
			e.BytesInPerSec += d * ack
		}
	}
	return e
}

// publishSize returns the wire size of a PUBLISH of group gid, of a topic of the group's
// mean length and its mean payload size.
func (sh *planShared) publishSize(gid int) int {
	g := sh.groups[gid]
	topicLen := int(math.Round(sh.g[gid].pub.avgLen(g.ClientCount, g.ids())))
	return publishSize(topicLen, g.QoS, g.ProtocolVersion, propsSize(g.PublishProperties), g.meanPayload())
}

// copySize returns the wire size and QoS of a copy of a message of group gid as the broker
// delivers it: as published but without properties, or, for a plain file, at the lower QoS
// of the publishers' and the receiving group's, in the receiving group's version.
func (sh *planShared) copySize(gid int) (size int, qos byte) {
	g := sh.groups[gid]
	qos, v, props := g.QoS, g.ProtocolVersion, 0
	if r := sh.copyAs; r != nil {
		qos, v, props = min(qos, r.QoS), r.ProtocolVersion, propsSize(g.PublishProperties)
	}
	topicLen := int(math.Round(sh.g[gid].pub.avgLen(sh.g[gid].pubs, g.ids())))
	return publishSize(topicLen, qos, v, props, g.meanPayload()), qos
}

// propsSize returns the wire size of a property list.
func propsSize(list []Property) int {
	n := 0
	for i := range list {
		n += list[i].size()
	}
	return n
}

// countDeliveries counts the deliveries per second of every publishing group of the whole
// plan.
func (sh *planShared) countDeliveries() {
	buf := make([]byte, 0, 64)
	for gid, g := range sh.groups {
		pg := &sh.g[gid]
		np := pg.pubs
		if np == 0 || !g.ExpectDelivery {
			continue
		}
		total := 0
		request := g.has(BehaviourRequest)
		copies := func(topic string) int {
			n := sh.m.deliveries(topic)
			if request {
				n += max(sh.m.responses(topic), 1)
			}
			return n
		}
		ts := pg.cycle // a cycle's messages go to each topic in turn: the mean of its topics'
		if len(ts) < 2 {
			ts = []template{pg.pub}
		}
		for k := range ts {
			t := &ts[k]
			if !t.indexed {
				total += copies(t.raw) * np
				continue
			}
			for j := range np {
				buf = appendParts(buf[:0], t.parts, j, g.ids())
				total += copies(string(buf))
			}
		}
		pg.deliv = float64(total) / float64(len(ts)) * g.PublishRate
	}
}

// publishSize returns the wire size of a PUBLISH packet.
func publishSize(topicLen int, qos byte, v Version, props, payload int) int {
	rem := 2 + topicLen + payload
	if qos > 0 {
		rem += 2 // packet identifier
	}
	if v == V5 {
		rem += varintLen(props) + props
	}
	return 1 + varintLen(rem) + rem
}

func varintLen(n int) int {
	switch {
	case n < 128:
		return 1
	case n < 16384:
		return 2
	case n < 2097152:
		return 3
	}
	return 4
}
