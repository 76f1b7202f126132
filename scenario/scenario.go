package scenario

import (
	"time"

	"github.com/mqblast/mqblast/codec"
)

// Type is the kind of a scenario: who publishes, who subscribes, and what a message is
// expected to reach. The names are those of the xmq_scn file format.
type Type string

// Scenario types. The first four are those of xmq_scn; the others are mqblast's additions.
const (
	// TypePointToPoint pairs each publisher with one subscriber: equal group sizes.
	TypePointToPoint Type = "Point-To-Point"
	// TypeFanIn has fewer subscribers than publishers.
	TypeFanIn Type = "Fan-In"
	// TypeFanOut has more subscribers than publishers.
	TypeFanOut Type = "Fan-Out"
	// TypeConnections only connects and holds the publisher group's clients: no subscribers,
	// no messages.
	TypeConnections Type = "Connections"
	// TypeSharedSubscription is a fan-in through "$share/<group>/<filter>" subscriptions: each
	// message is expected once per share group.
	TypeSharedSubscription Type = "Shared-Subscription"
	// TypeRoundTrip has one group whose clients each subscribe to their own topic
	// (ping/$clientid) and publish to it: every message comes back to its sender.
	TypeRoundTrip Type = "Round-Trip"
	// TypePublish only publishes, as emqtt-bench pub does: a publisher group and no
	// subscribers of ours, so no message is expected back (Client.Receivers is 0).
	TypePublish Type = "Publish"
	// TypeSubscribe only subscribes, as emqtt-bench sub does: a subscriber group that
	// receives whatever the broker delivers to its filters; someone else publishes.
	TypeSubscribe Type = "Subscribe"
)

// Types lists every scenario type, in the order the documentation gives them.
var Types = []Type{TypePointToPoint, TypeFanIn, TypeFanOut, TypeConnections,
	TypeSharedSubscription, TypeRoundTrip, TypePublish, TypeSubscribe}

func (t Type) known() bool {
	for _, k := range Types {
		if t == k {
			return true
		}
	}
	return false
}

// hasMessages reports whether the clients of scenarios of type t publish messages: the
// publish parameters (rate, payload, warm-up, drain) apply.
func (t Type) hasMessages() bool { return t != TypeConnections && t != TypeSubscribe }

// hasPublishers reports whether scenarios of type t have a publisher group.
func (t Type) hasPublishers() bool { return t != TypeSubscribe }

// hasSubscribers reports whether scenarios of type t have a subscriber group.
func (t Type) hasSubscribers() bool {
	return t != TypeConnections && t != TypeRoundTrip && t != TypePublish
}

// Version is an MQTT protocol version, numbered by its CONNECT protocol level: codec's.
// Its String is the version as people write it: "3.1", "3.1.1" or "5.0".
type Version = codec.Version

// Protocol versions. In scenario files protocol_version 3 (as xmq_scn writes it) and 4 both
// mean MQTT 3.1.1, 5 means MQTT 5.0, and the string "3.1" means MQTT 3.1 (protocol name
// "MQIsdp", level 3).
const (
	V31  = codec.V31
	V311 = codec.V311
	V5   = codec.V5
)

// Reconnect says what a client does when its connection drops during a run.
type Reconnect string

// Reconnect policies.
const (
	// ReconnectOff leaves a dropped client disconnected and counts it (the default).
	ReconnectOff Reconnect = "off"
	// ReconnectBackoff reconnects with exponential backoff.
	ReconnectBackoff Reconnect = "backoff"
)

// MinPayloadSize is the smallest payload of a measured run: the 16-byte measurement header
// (due time, publisher number, sequence number).
const MinPayloadSize = 16

// PayloadTextAt is where the payload literal ("payload") starts in every message: after
// the measurement header and the 8-byte write time that a payload of this size or more
// carries after it (the engine's measurement bytes).
const PayloadTextAt = MinPayloadSize + 8

// maxPayloadSize keeps a PUBLISH under the 256 MiB MQTT remaining-length limit with room for
// the topic and properties.
const maxPayloadSize = 256<<20 - 64<<10

// maxClients bounds a group so that every count fits comfortably in an int on all platforms.
const maxClients = 100_000_000

// Scenario is a scenario file: what to run. Parse and Load fill in the defaults; Set and
// SetBrokers override fields; Validate checks the whole; NewPlan expands it into clients.
//
// The JSON form is that of xmq_scn plus the optional fields documented on each struct. Time
// spans are time.Duration here and whole or fractional seconds ("_sec") in the file. A Scenario is not safe for concurrent modification.
type Scenario struct {
	Name        string   // "name": free text, shown in reports
	Type        Type     // "type"
	Comments    []string // "comments": free text
	Publishers  *Group   // "publishers"; nil when absent
	Subscribers *Group   // "subscribers"; nil when absent
	// Groups ("groups", mqblast's addition) are the client groups of a mixed scenario
	// (TypeMixed): several kinds of clients in one run. Nil for a plain scenario, whose
	// publishers and subscribers are its groups.
	Groups     []*ClientGroup
	Server     Server     // "server"
	Parameters Parameters // "parameters"
	// Thresholds ("thresholds", mqblast's addition) are pass/fail criteria of the run, k6
	// style: expressions PATH OP NUMBER over the result document, e.g. "messages.lost==0"
	// or "latency_us.p99<50000" (bench.ParseThreshold). The file gives a list of strings or
	// one string. Validate checks that none is empty; their paths are checked by bench
	// (bench.CheckThresholdPaths), which cmd/mqblast calls before a run.
	Thresholds []string
	// ClientID and CredentialsFile ("client_id", "credentials_file") are every group's
	// identity unless the group gives its own (see Group).
	ClientID        string
	CredentialsFile string

	file  string      // where the scenario came from, for error messages
	creds *credsCache // the credentials files read, shared by clones: each is read once
}

// Group is a publisher or subscriber group: client_count clients with the same settings.
type Group struct {
	IDPrefix string // "id_prefix": client id = IDPrefix + decimal index in the group
	// IDSuffix and IDPad complete IDPrefix when a client_id template gives text after
	// $clientindex or pads it ($clientindex:W): client id = IDPrefix + index zero-padded to
	// IDPad digits + IDSuffix (Group.ID). Validate derives them, never a file.
	IDSuffix        string
	IDPad           int
	ProtocolVersion Version
	ClientCount     int  // "client_count"
	QoS             byte // "qos": publish QoS of publishers, subscription QoS of subscribers
	CleanSession    bool // "clean_session" (clean start in MQTT 5); default true
	// Topics holds topic templates ("topics", a string or an array): the one topic a
	// publisher publishes to, or the filters a subscriber subscribes to. Templates may hold
	// $clientindex (0-based index in the group) and $clientid; filters may hold wildcards
	// and "$share/<group>/".
	Topics []string
	Retain bool // "retain" (publishers only): publish with the RETAIN flag

	// NoLocal, RetainAsPublished and RetainHandling are the MQTT 5.0 subscription options
	// of every filter the group subscribes to ("no_local", "retain_as_published",
	// "retain_handling"); they apply to a subscribing group only (subscribers, and the
	// group of a Round-Trip scenario) and are refused for 3.x groups unless left at their
	// defaults (false, false, 0).
	//
	// NoLocal asks the broker not to deliver a client's own messages back to it; a
	// shared-subscription filter cannot carry it [MQTT-3.8.3-4]. RetainAsPublished keeps
	// the RETAIN flag of forwarded messages as published. RetainHandling says when retained
	// messages are sent: 0 at every subscribe, 1 only when the subscription is new, 2 never.
	NoLocal           bool
	RetainAsPublished bool
	RetainHandling    byte

	// ConnectProperties and PublishProperties are MQTT 5 properties sent on CONNECT and on
	// every PUBLISH ("connect_properties", "publish_properties"); refused for 3.x groups.
	ConnectProperties []Property
	PublishProperties []Property

	// ClientID ("client_id") is a template of the group's client ids: text with $groupindex
	// (the group's index: its place in "groups", or 0 for publishers and 1 for subscribers)
	// and $clientindex once, anywhere ("dev-$clientindex-eu"), zero-padded to W digits as
	// $clientindex:W. When given (here or the scenario's), it replaces IDPrefix, and
	// Validate derives IDPrefix, IDSuffix and IDPad from it. CredentialsFile
	// ("credentials_file") is a CSV file of per-client usernames and passwords (see
	// credentials.go), the scenario's when empty.
	ClientID        string
	CredentialsFile string
	// Arrival ("arrival", publishers only) is how a publisher's messages fall due at its
	// mean rate (publish_rate): "constant" (the default, "" too), "poisson" or "burst".
	Arrival Arrival
	// BurstSize ("burst_size") is the messages of one burst of arrival "burst": they fall
	// due at once, every BurstSize/publish_rate seconds.
	BurstSize int
}

// Arrival says how a publisher's messages fall due at its mean rate.
type Arrival string

// Arrivals.
const (
	// ArrivalConstant: one message every 1/rate (the default).
	ArrivalConstant Arrival = "constant"
	// ArrivalPoisson: gaps drawn from an exponential distribution of mean 1/rate, the
	// same draws in every run and shard (a generator seeded by the publisher's number).
	ArrivalPoisson Arrival = "poisson"
	// ArrivalBurst: burst_size messages at once, every burst_size/rate.
	ArrivalBurst Arrival = "burst"
)

// MaxBurstSize is the most messages one burst holds.
const MaxBurstSize = 1_000_000

// Server says where the broker is. An empty Hostname and no Brokers mean "no broker given":
// mqblast run then starts the embedded broker.
type Server struct {
	Hostname string // "hostname"
	Port     int    // "port"; default 1883
	// Scheme ("scheme", mqblast's addition) is the transport: "mqtt" (TCP, also when
	// empty), "mqtts" (TLS), "ws" (MQTT over WebSocket) or "wss" (over WebSocket over TLS);
	// Path ("path") is the WebSocket request path (default /mqtt). A broker URL given to
	// --broker sets them.
	Scheme   string
	Path     string
	Username string // "username"
	Password string // "password"
	// Brokers ("brokers", mqblast's addition) lists several "host:port" addresses, for a
	// cluster; clients are spread over them round-robin. When set it replaces Hostname and
	// Port. SetBrokers fills it from --broker.
	Brokers []string
	// ClientCert ("cert", "key", "client_ca", "client_ca_key", "client_cert_subject",
	// mqblast's additions) is where each client's TLS certificate comes from.
	ClientCert ClientCert

	given uint32 // fields the file or Set gave (svGiven* bits)
}

// Parameters are the run parameters of a scenario.
type Parameters struct {
	// ConnectionRate is the connections per second of the whole run ("connection_rate").
	ConnectionRate float64
	// Duration is how long publishers publish, warm-up included ("duration_sec"); for
	// Connections and Subscribe, how long the clients stay connected (and, for Subscribe,
	// receive); these two need it > 0. Zero with MessageCount > 0 means
	// "until every publisher has sent MessageCount messages".
	Duration time.Duration
	// PayloadSize is the payload of every message in bytes, the 16-byte measurement header
	// included ("payload_size", a number or a size such as "64KiB").
	PayloadSize int
	// PayloadSizes, when payload_size is a weighted list or a range (SizeDist), is that
	// distribution, and PayloadSize its largest size; nil for one size.
	PayloadSizes *SizeDist
	// PayloadTemplate ("payload_template", mqblast's addition) is the text every message
	// carries after its measurement bytes, rendered per message: text or JSON with
	// placeholders in double braces ({{seq}}, {{rand_int 1 9}}, {{mark}}; package
	// internal/payloadtpl lists them). When set, PayloadSize is PayloadTextAt + its longest
	// rendering, whatever payload_size says. It is the default of every publishing group's
	// own.
	PayloadTemplate string
	// PayloadFile ("payload_file", mqblast's addition) names the payloads messages carry
	// after their measurement bytes instead: a directory (each file one payload), a
	// JSON-lines file (.jsonl, .ndjson: each line one), or one file; each is a template
	// (text without placeholders is sent as it is). PayloadOrder ("payload_order") is
	// OrderRoundRobin (default) or OrderRandom. The payload size follows from them. The
	// default of every publishing group's.
	PayloadFile  string
	PayloadOrder string
	// Measure ("measure", mqblast's addition) is where messages carry their measurement:
	// MeasureHeader (default), MeasureMark or MeasureNone; the default of every publishing
	// group's.
	Measure Measure
	// Payload ("payload", mqblast's addition) is literal text sent in every message after
	// its measurement bytes (the 16-byte header and the 8-byte write time), from byte
	// PayloadTextAt on; when set, PayloadSize is PayloadTextAt + len(Payload).
	Payload string
	// PublishRate is the messages per second of each publisher ("publish_rate").
	PublishRate float64
	// KeepAlive is the MQTT keepalive ("keep_alive_sec"), whole seconds, 0 to 65535.
	KeepAlive time.Duration
	// MaxInflight bounds unacknowledged QoS 1/2 messages per connection
	// ("max_inflight_messages"); it is the Receive Maximum of MQTT 5 clients.
	MaxInflight int
	// MessageCount stops each publisher after that many messages; 0 means no limit
	// ("message_count").
	MessageCount int
	// Warmup is the start of the publishing time that is not measured ("warmup_sec"). Zero
	// means the default, a tenth of Duration capped at 30 s, unless the file says 0.
	Warmup time.Duration
	// Drain is how long subscribers wait for in-flight messages after publishing stops
	// ("drain_sec"), at least: the drain goes on while copies keep arriving, up to a bound
	// (bench.MaxDrain); default 5 s, or 0 when the file says so. Connections and Subscribe
	// scenarios publish nothing, so for them it defaults to 0, as do PublishRate and Warmup.
	Drain time.Duration
	// Reconnect is the reconnect policy ("reconnect": "off" or "backoff"); default off.
	Reconnect Reconnect
	// Bind lists source addresses ("bind"): addresses, ranges "10.0.0.2-10.0.0.40" and
	// prefixes "10.0.0.0/24". Interface names are accepted by Validate but must be resolved
	// to addresses by the caller (SetBind) before NewPlan.
	Bind []string
	// Stages ("stages", mqblast's addition) change the offered rate while the connections
	// stay up: each publisher publishes at each stage's rate in turn (see Stage). With
	// stages, Duration is their total and PublishRate their highest rate (the schedule's
	// base, which the estimates and host checks assume): values given for those two are
	// replaced. Warmup defaults to 0 and lies in the first stage. Nil: no stages.
	Stages []Stage

	given     uint32 // fields the file or Set gave explicitly (given* bits)
	defaulted uint32 // fields applyDefaults filled in, recomputed on each call
}

// Bits of Parameters.given: fields whose default depends on other fields.
const (
	givenPublishRate uint32 = 1 << iota
	givenPayloadSize
	givenWarmup
	givenDrain
)

// Property is an MQTT 5 property of a CONNECT or PUBLISH, as written in a scenario file:
// {"name": "session_expiry_interval", "value": 300} or
// {"name": "user_property", "key": "k", "value": "v"}.
type Property struct {
	Name string // snake_case MQTT 5 name, e.g. "message_expiry_interval"
	ID   byte   // the MQTT 5 property identifier, e.g. 0x02; filled in by the decoder
	Num  uint32 // the value of a numeric property
	Str  string // the value of a string or binary property, or of a user property
	Key  string // the key of a user_property
}

// File returns the file name (or built-in name) the scenario was read from, "" if none.
func (s *Scenario) File() string { return s.file }

// svGivenPort marks a server's port as given (Server.given).
const svGivenPort uint32 = 1

// namesBroker reports whether the server names a broker (a host or brokers); a group's
// own server may give only credentials, its clients then connect to the run's brokers.
func (sv *Server) namesBroker() bool { return sv.Hostname != "" || len(sv.Brokers) > 0 }

// hasCredentials reports whether the server gives a username or a password.
func (sv *Server) hasCredentials() bool { return sv.Username != "" || sv.Password != "" }

// HasServer reports whether the scenario names a broker. Without one, mqblast run starts the
// embedded broker.
func (s *Scenario) HasServer() bool {
	return s.Server.Hostname != "" || len(s.Server.Brokers) > 0
}

// defaultScenario returns the scenario that a file's fields are decoded onto.
func defaultScenario(file string) *Scenario {
	return &Scenario{
		file:   file,
		Server: Server{Port: 1883},
		Parameters: Parameters{
			ConnectionRate: 1000,
			Duration:       60 * time.Second,
			KeepAlive:      60 * time.Second,
			MaxInflight:    1024,
			Reconnect:      ReconnectOff,
		},
	}
}

// defaultGroup returns the group that a file's "publishers" or "subscribers" is decoded onto.
func defaultGroup(idPrefix string) *Group {
	return &Group{IDPrefix: idPrefix, ProtocolVersion: V311, ClientCount: 1, CleanSession: true}
}

// Defaults of the fields whose default depends on others.
const (
	defaultDrain     = 5 * time.Second
	maxDefaultWarmup = 30 * time.Second
)

// applyDefaults fills in the defaults that depend on other fields: a field the file or Set
// gave is kept, and so is a non-zero value set from Go; a field applyDefaults filled itself is
// recomputed, so that it follows later changes (Set "type" or "parameters.duration_sec").
func (s *Scenario) applyDefaults() {
	p := &s.Parameters
	var rate float64
	var warmup, drain time.Duration
	msgs := s.Type.hasMessages()
	if s.Groups != nil {
		if s.Type == "" {
			s.Type = TypeMixed
		}
		msgs = s.mixedMessages()
	}
	if len(p.Stages) > 0 && msgs {
		// The stages say how long publishers publish and at which rates: the schedule is
		// built at the highest and scaled to each stage's. Stages that checkStages refuses
		// leave the two alone, so that only their own problems are reported.
		if total := StagesTotal(p.Stages); total > 0 && total <= maxSpan {
			p.Duration = total
		}
		if peak := StagesPeak(p.Stages); peak > 0 && peak <= MaxPublishRate {
			p.PublishRate = peak
			p.given |= givenPublishRate
		}
	}
	if msgs {
		rate = 1
		warmup = min(p.Duration/10, maxDefaultWarmup)
		if len(p.Stages) > 0 {
			warmup = 0 // a stage's figures cover the whole stage
		}
		drain = defaultDrain
	}
	fill(p, givenPublishRate, &p.PublishRate, rate)
	fill(p, givenWarmup, &p.Warmup, warmup)
	fill(p, givenDrain, &p.Drain, drain)
	fill(p, givenPayloadSize, &p.PayloadSize, literalSize(p.Payload))
	if p.PayloadTemplate != "" { // as stages replace the duration: the template gives the size
		p.PayloadSize = templateSize(p.PayloadTemplate, 0, p.Measure)
	}
	if p.Reconnect == "" {
		p.Reconnect = ReconnectOff
	}
	if s.Groups != nil {
		s.applyGroupDefaults()
	}
	s.applyIdentity()
}

// literalSize is the payload size that carries the payload literal text: the measurement
// bytes and the text after them, or the measurement header alone without text.
func literalSize(text string) int {
	if text == "" {
		return MinPayloadSize
	}
	return PayloadTextAt + len(text)
}

func fill[T comparable](p *Parameters, bit uint32, cur *T, def T) {
	var zero T
	if p.given&bit != 0 {
		return
	}
	if *cur == zero || p.defaulted&bit != 0 {
		*cur = def
		p.defaulted |= bit
	}
}

// Clone returns a deep copy of s.
func (s *Scenario) Clone() *Scenario {
	c := *s
	c.Comments = append([]string(nil), s.Comments...)
	c.Publishers = s.Publishers.clone()
	c.Subscribers = s.Subscribers.clone()
	if s.Groups != nil {
		c.Groups = make([]*ClientGroup, len(s.Groups))
		for i, g := range s.Groups {
			if g != nil {
				c.Groups[i] = g.clone()
			}
		}
	}
	c.Server.Brokers = append([]string(nil), s.Server.Brokers...)
	c.Parameters.Bind = append([]string(nil), s.Parameters.Bind...)
	if s.Parameters.Stages != nil {
		c.Parameters.Stages = append([]Stage{}, s.Parameters.Stages...)
	}
	c.Thresholds = append([]string(nil), s.Thresholds...)
	return &c
}

func (g *Group) clone() *Group {
	if g == nil {
		return nil
	}
	c := *g
	c.Topics = append([]string(nil), g.Topics...)
	c.ConnectProperties = append([]Property(nil), g.ConnectProperties...)
	c.PublishProperties = append([]Property(nil), g.PublishProperties...)
	return &c
}
