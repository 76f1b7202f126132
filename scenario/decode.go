package scenario

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/mqblast/mqblast/internal/bytesize"

	"github.com/mqblast/mqblast/internal/strictjson"
)

// Load reads and decodes the scenario file at path, the way Parse does. Errors name the file
// by path as given.
func Load(path string) (*Scenario, error) {
	s, err := LoadAll(path)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// LoadAll reads the scenario file at path the way ParseAll does: the scenario decoded as far
// as it goes, with every decode problem. The Scenario is nil when the file cannot be read or
// is not a JSON object.
func LoadAll(path string) (*Scenario, error) {
	data, err := strictjson.ReadFile(path, "scenario")
	if err != nil {
		return nil, err
	}
	return ParseAll(path, data)
}

// Parse decodes a scenario from JSON; name (a file or built-in name) prefixes every error.
// Fields the file leaves out get their defaults. Parse reports every syntax error, unknown
// field and wrongly typed value, joined (see Errors), and returns a nil Scenario then. It does
// not check values against each other: call Validate for that, after any Set.
func Parse(name string, data []byte) (*Scenario, error) {
	s, err := ParseAll(name, data)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// ParseAll is Parse that keeps going: it returns the scenario decoded as far as the file
// allows (a field that failed to decode keeps its default) together with every decode
// problem, so that Validate can report the rest (see ValidateAfter). The Scenario is nil
// only when data is not a JSON object.
func ParseAll(name string, data []byte) (*Scenario, error) {
	l := &errList{File: name}
	obj := strictjson.ParseObject(data, "a scenario", l)
	if obj == nil {
		return nil, l.Err()
	}
	s := defaultScenario(name)
	decodeObject(s, scenarioFields, obj, "", l)
	return s, l.Err()
}

// Set overrides one field, as --set path=value does: path is the field's JSON path
// ("parameters.publish_rate", "publishers.qos", "server.hostname", "name") and value is parsed
// for the field's type: a number, true/false, seconds or a Go duration ("30s") for _sec
// fields, a string as is (also one that looks like JSON, such as a payload {"t": 1}, unless
// it is a JSON string, "\"text\""). Another field's value starting with '[', '{' or '"' is
// read as JSON, as is a password's; a list field also takes comma-separated items; an object
// value ("parameters={...}") merges into the object, and null removes a group. Setting a
// field of an absent group creates the group with its defaults. Errors name "--set" and the
// path.
func (s *Scenario) Set(path, value string) error {
	l := &errList{File: "--set"}
	f, obj, err := s.lookup(path)
	if err != nil {
		l.Add(path, "%v", err)
		return l.Err()
	}
	v, perr := setValue(f.ptr(obj), value, f.secret)
	switch {
	case perr != nil && f.secret:
		l.Add(path, "%s", secretNotJSON)
		return l.Err()
	case perr != nil:
		l.Add(path, "%s is not valid JSON: %v", strconv.Quote(value), perr)
		return l.Err()
	}
	decodeField(obj, f, v, path, l)
	return l.Err()
}

// lookup finds the field at a dotted path and the object it belongs to.
func (s *Scenario) lookup(path string) (field, any, error) {
	first, rest, nested := strings.Cut(path, ".")
	f, ok := findField(scenarioFields, first)
	if !ok {
		return field{}, nil, fmt.Errorf("unknown field%s", suggest(first, fieldNames(scenarioFields)))
	}
	if !nested {
		return f, s, nil
	}
	var obj any
	var fields []field
	switch first {
	case "publishers":
		if s.Publishers == nil {
			s.Publishers = defaultGroup(defaultPubPrefix)
		}
		obj, fields = s.Publishers, groupFields
	case "subscribers":
		if s.Subscribers == nil {
			s.Subscribers = defaultGroup(defaultSubPrefix)
		}
		obj, fields = s.Subscribers, groupFields
	case "server":
		obj, fields = &s.Server, serverFields
	case "parameters":
		obj, fields = &s.Parameters, paramFields
	case "groups":
		return s.lookupGroup(rest)
	default:
		return field{}, nil, fmt.Errorf("%q has no fields", first)
	}
	f, ok = findField(fields, rest)
	if !ok {
		return field{}, nil, fmt.Errorf("unknown field%s", suggest(rest, fieldNames(fields)))
	}
	return f, obj, nil
}

// lookupGroup finds a field of a client group, by the group's name: "NAME.field",
// "NAME.churn.field" or "NAME.server.field".
func (s *Scenario) lookupGroup(path string) (field, any, error) {
	name, rest, _ := strings.Cut(path, ".")
	var g *ClientGroup
	var names []string
	for _, x := range s.Groups {
		if x != nil && x.Name == name {
			g = x
		}
		if x != nil {
			names = append(names, x.Name)
		}
	}
	if g == nil {
		return field{}, nil, fmt.Errorf("no group named %q (want groups.NAME.field)%s", name, suggest(name, names))
	}
	var obj any = g
	fields := clientGroupFields
	if sub, rest2, nested := strings.Cut(rest, "."); nested {
		switch sub {
		case "churn":
			if g.Churn == nil {
				g.Churn = &Churn{}
			}
			obj, fields, rest = g.Churn, churnFields, rest2
		case "server":
			if g.Server == nil {
				g.Server = &Server{Port: 1883}
			}
			obj, fields, rest = g.Server, serverFields, rest2
		default:
			return field{}, nil, fmt.Errorf("%q has no fields", sub)
		}
	}
	f, ok := findField(fields, rest)
	if !ok {
		return field{}, nil, fmt.Errorf("unknown field%s", suggest(rest, fieldNames(fields)))
	}
	return f, obj, nil
}

// setValue turns a --set value into what the JSON decoder would have produced for dst. A
// string field takes the value as it is unless it is a JSON string ("\"hello\""): text that
// looks like JSON ({"temp": 21}, a payload) is text there; a secret field (secret) reads
// any value starting with '[', '{' or '"' as JSON, as the other fields do.
func setValue(dst any, value string, secret bool) (any, error) {
	t := strings.TrimSpace(value)
	if _, ok := dst.(*string); ok && !secret {
		if v, err := parseJSON([]byte(t)); err == nil && strings.HasPrefix(t, "\"") {
			return v, nil
		}
		return value, nil
	}
	if t != "" && strings.ContainsRune("[{\"", rune(t[0])) {
		return parseJSON([]byte(t))
	}
	switch dst.(type) {
	case *string, *Type, *Reconnect, *Arrival:
		return value, nil
	case *[]string, *[]Behaviour:
		items := strings.Split(value, ",")
		out := make([]any, len(items))
		for i, it := range items {
			out[i] = strings.TrimSpace(it)
		}
		return out, nil
	}
	// Numbers, booleans and null as JSON; anything else as a string, which the decoder
	// takes (a duration "30s", a size "64KiB", a version "3.1") or reports as a wrong type.
	if v, err := parseJSON([]byte(t)); err == nil {
		return v, nil
	}
	return value, nil
}

// SetBrokers replaces the server with the brokers of --broker: each item is "host:port",
// "host" (port 1883) or a URL (mqtt://, mqtts://, ws://, wss://host[:port][/path]), and an
// item may hold several separated by commas. The first broker also becomes server.hostname,
// server.port, server.scheme and server.path. Username and password are kept.
func (s *Scenario) SetBrokers(brokers []string) error {
	l := &errList{File: "--broker"}
	var out []string
	var urls []brokerURL
	for _, item := range brokers {
		for b := range strings.SplitSeq(item, ",") {
			b = strings.TrimSpace(b)
			if b == "" {
				continue
			}
			u, err := parseBroker(b)
			if err != nil {
				l.Add("", "%s %v", strconv.Quote(b), err)
				continue
			}
			urls = append(urls, u)
			out = append(out, u.String())
		}
	}
	if len(out) == 0 && len(l.Errs) == 0 {
		l.Add("", "no broker given (want host:port)")
	}
	if len(l.Errs) > 0 {
		return l.Err()
	}
	s.Server.Hostname, s.Server.Port, s.Server.Path = urls[0].host, urls[0].port, urls[0].path
	s.Server.Scheme = urls[0].scheme
	if s.Server.Scheme == "mqtt" {
		s.Server.Scheme = ""
	}
	if len(out) == 1 {
		s.Server.Brokers = nil
	} else {
		s.Server.Brokers = out
	}
	return nil
}

// normalizeHostPort checks "host:port" or "host" and returns "host:port".
func normalizeHostPort(b string) (string, error) {
	host, port, err := net.SplitHostPort(b)
	if err != nil {
		// No port: a host name or a bare IPv6 address.
		if _, perr := netip.ParseAddr(b); strings.Contains(b, ":") && perr != nil {
			return "", errors.New("is not host:port")
		}
		host, port = b, "1883"
	}
	if host == "" {
		return "", errors.New("has no host (want host:port)")
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("has port %q (want 1..65535)", port)
	}
	return net.JoinHostPort(host, port), nil
}

// SetBind replaces parameters.bind, as --bind does: each item is an address, a range
// ("127.0.0.2-127.0.0.40") or a prefix ("10.0.0.0/24"), several may be separated by commas.
// Interface names must be resolved to addresses by the caller first.
func (s *Scenario) SetBind(addrs []string) error {
	l := &errList{File: "--bind"}
	var out []string
	for _, item := range addrs {
		for a := range strings.SplitSeq(item, ",") {
			a = strings.TrimSpace(a)
			if a == "" {
				continue
			}
			if _, err := parseSource(a); err != nil {
				l.Add("", "%s %v", strconv.Quote(a), err)
				continue
			}
			out = append(out, a)
		}
	}
	if len(l.Errs) > 0 {
		return l.Err()
	}
	s.Parameters.Bind = out
	return nil
}

// object is a decoded JSON object with its keys in file order.
type object = strictjson.Object

// parseJSON decodes data into *object, []any, json.Number, string, bool and nil values.
func parseJSON(data []byte) (any, error) { return strictjson.Parse(data) }

// field describes one JSON field of an object: its name and where it is stored.
type field struct {
	name  string
	ptr   func(obj any) any // pointer to the Go field inside obj
	given uint32            // bit of Parameters.given to set when decoded
	// secret marks a field whose value no message may show (server.password).
	secret bool
}

// groupSlot is where "publishers" or "subscribers" is stored.
type groupSlot struct {
	g      **Group
	prefix string
}

// sizeField is an int that also takes a size with a unit ("64KiB"), and, where dist is
// set, a distribution of sizes (SizeDist: p is then its largest).
type sizeField struct {
	p    *int
	dist **SizeDist
}

// retainHandlingField is a byte that holds an MQTT 5 Retain Handling option, 0 to 2.
type retainHandlingField struct{ p *byte }

// Default client id prefixes of groups that do not give one.
const (
	defaultPubPrefix = "mqblast-pub-"
	defaultSubPrefix = "mqblast-sub-"
)

var scenarioFields = []field{
	{name: "name", ptr: func(o any) any { return &o.(*Scenario).Name }},
	{name: "type", ptr: func(o any) any { return &o.(*Scenario).Type }},
	{name: "comments", ptr: func(o any) any { return &o.(*Scenario).Comments }},
	{name: "publishers", ptr: func(o any) any { return groupSlot{&o.(*Scenario).Publishers, defaultPubPrefix} }},
	{name: "subscribers", ptr: func(o any) any { return groupSlot{&o.(*Scenario).Subscribers, defaultSubPrefix} }},
	{name: "server", ptr: func(o any) any { return &o.(*Scenario).Server }},
	{name: "parameters", ptr: func(o any) any { return &o.(*Scenario).Parameters }},
	{name: "thresholds", ptr: func(o any) any { return &o.(*Scenario).Thresholds }},
	{name: "groups", ptr: func(o any) any { return &o.(*Scenario).Groups }},
	{name: "client_id", ptr: func(o any) any { return &o.(*Scenario).ClientID }},
	{name: "credentials_file", ptr: func(o any) any { return &o.(*Scenario).CredentialsFile }},
}

// clientGroupFields are the fields of a "groups" entry: a group's own, then those of a
// publisher or subscriber group (but "topics", which is the topic it publishes to).
var clientGroupFields = func() []field {
	cg := func(o any) *ClientGroup { return o.(*ClientGroup) }
	out := []field{
		{name: "name", ptr: func(o any) any { return &cg(o).Name }},
		{name: "behaviours", ptr: func(o any) any { return &cg(o).Behaviours }},
	}
	for _, f := range groupFields {
		inner := f.ptr
		g := f
		g.ptr = func(o any) any { return inner(&cg(o).Group) }
		if f.name == "topics" {
			g.given = cgGivenTopics
		}
		out = append(out, g)
	}
	return append(out,
		field{name: "filters", ptr: func(o any) any { return &cg(o).Filters }, given: cgGivenFilters},
		field{name: "response_topic", ptr: func(o any) any { return &cg(o).ResponseTopic }, given: cgGivenResponseTopic},
		field{name: "fraction", ptr: func(o any) any { return &cg(o).Fraction }, given: cgGivenFraction},
		field{name: "publish_rate", ptr: func(o any) any { return &cg(o).PublishRate }, given: cgGivenRate},
		field{name: "payload_size", ptr: func(o any) any { return sizeField{&cg(o).PayloadSize, &cg(o).PayloadSizes} }, given: cgGivenPayload},
		field{name: "payload_template", ptr: func(o any) any { return &cg(o).PayloadTemplate }, given: cgGivenPayloadTemplate},
		field{name: "measure", ptr: func(o any) any { return (*string)(&cg(o).Measure) }, given: cgGivenMeasure},
		field{name: "payload_file", ptr: func(o any) any { return &cg(o).PayloadFile }, given: cgGivenPayloadFile},
		field{name: "payload_order", ptr: func(o any) any { return &cg(o).PayloadOrder }, given: cgGivenPayloadOrder},
		field{name: "keep_alive_sec", ptr: func(o any) any { return &cg(o).KeepAlive }, given: cgGivenKeepAlive},
		field{name: "session_expiry_sec", ptr: func(o any) any { return &cg(o).SessionExpiry }, given: cgGivenSessionExpiry},
		field{name: "start_sec", ptr: func(o any) any { return &cg(o).Start }},
		field{name: "expect_delivery", ptr: func(o any) any { return &cg(o).ExpectDelivery }},
		field{name: "server", ptr: func(o any) any { return serverSlot{&cg(o).Server} }},
		field{name: "churn", ptr: func(o any) any { return &cg(o).Churn }},
		field{name: "reconnect", ptr: func(o any) any { return &cg(o).Reconnect }, given: cgGivenReconnect},
	)
}()

var churnFields = []field{
	{name: "fraction", ptr: func(o any) any { return &o.(*Churn).Fraction }, given: cgGivenFraction},
	{name: "at_sec", ptr: func(o any) any { return &o.(*Churn).At }},
	{name: "clean_session", ptr: func(o any) any { return &o.(*Churn).CleanSession }, given: cgGivenCleanSession},
	{name: "down_sec", ptr: func(o any) any { return &o.(*Churn).Down }},
	{name: "rate", ptr: func(o any) any { return &o.(*Churn).Rate }, given: cgGivenRate},
}

// serverSlot is where a group's own "server" is stored.
type serverSlot struct{ s **Server }

var groupFields = []field{
	{name: "id_prefix", ptr: func(o any) any { return &o.(*Group).IDPrefix }},
	{name: "protocol_version", ptr: func(o any) any { return &o.(*Group).ProtocolVersion }},
	{name: "client_count", ptr: func(o any) any { return &o.(*Group).ClientCount }},
	{name: "qos", ptr: func(o any) any { return &o.(*Group).QoS }},
	{name: "clean_session", ptr: func(o any) any { return &o.(*Group).CleanSession }},
	{name: "topics", ptr: func(o any) any { return &o.(*Group).Topics }},
	{name: "retain", ptr: func(o any) any { return &o.(*Group).Retain }},
	{name: "no_local", ptr: func(o any) any { return &o.(*Group).NoLocal }},
	{name: "retain_as_published", ptr: func(o any) any { return &o.(*Group).RetainAsPublished }},
	{name: "retain_handling", ptr: func(o any) any { return retainHandlingField{&o.(*Group).RetainHandling} }},
	{name: "connect_properties", ptr: func(o any) any { return &o.(*Group).ConnectProperties }},
	{name: "publish_properties", ptr: func(o any) any { return &o.(*Group).PublishProperties }},
	{name: "client_id", ptr: func(o any) any { return &o.(*Group).ClientID }},
	{name: "credentials_file", ptr: func(o any) any { return &o.(*Group).CredentialsFile }},
	{name: "arrival", ptr: func(o any) any { return &o.(*Group).Arrival }},
	{name: "burst_size", ptr: func(o any) any { return &o.(*Group).BurstSize }},
}

var serverFields = []field{
	{name: "hostname", ptr: func(o any) any { return &o.(*Server).Hostname }},
	{name: "port", ptr: func(o any) any { return &o.(*Server).Port }, given: svGivenPort},
	{name: "username", ptr: func(o any) any { return &o.(*Server).Username }},
	{name: "password", ptr: func(o any) any { return &o.(*Server).Password }, secret: true},
	{name: "brokers", ptr: func(o any) any { return &o.(*Server).Brokers }},
	{name: "scheme", ptr: func(o any) any { return &o.(*Server).Scheme }},
	{name: "path", ptr: func(o any) any { return &o.(*Server).Path }},
	{name: "cert", ptr: func(o any) any { return &o.(*Server).ClientCert.Cert }},
	{name: "key", ptr: func(o any) any { return &o.(*Server).ClientCert.Key }},
	{name: "client_ca", ptr: func(o any) any { return &o.(*Server).ClientCert.CA }},
	{name: "client_ca_key", ptr: func(o any) any { return &o.(*Server).ClientCert.CAKey }},
	{name: "client_cert_subject", ptr: func(o any) any { return &o.(*Server).ClientCert.Subject }},
	{name: "client_cert_san", ptr: func(o any) any { return &o.(*Server).ClientCert.SAN }},
}

var paramFields = []field{
	{name: "connection_rate", ptr: func(o any) any { return &o.(*Parameters).ConnectionRate }},
	{name: "duration_sec", ptr: func(o any) any { return &o.(*Parameters).Duration }},
	{name: "payload_size", ptr: func(o any) any {
		return sizeField{&o.(*Parameters).PayloadSize, &o.(*Parameters).PayloadSizes}
	}, given: givenPayloadSize},
	{name: "payload", ptr: func(o any) any { return &o.(*Parameters).Payload }},
	{name: "payload_template", ptr: func(o any) any { return &o.(*Parameters).PayloadTemplate }},
	{name: "measure", ptr: func(o any) any { return (*string)(&o.(*Parameters).Measure) }},
	{name: "payload_file", ptr: func(o any) any { return &o.(*Parameters).PayloadFile }},
	{name: "payload_order", ptr: func(o any) any { return &o.(*Parameters).PayloadOrder }},
	{name: "publish_rate", ptr: func(o any) any { return &o.(*Parameters).PublishRate }, given: givenPublishRate},
	{name: "keep_alive_sec", ptr: func(o any) any { return &o.(*Parameters).KeepAlive }},
	{name: "max_inflight_messages", ptr: func(o any) any { return &o.(*Parameters).MaxInflight }},
	{name: "message_count", ptr: func(o any) any { return &o.(*Parameters).MessageCount }},
	{name: "warmup_sec", ptr: func(o any) any { return &o.(*Parameters).Warmup }, given: givenWarmup},
	{name: "drain_sec", ptr: func(o any) any { return &o.(*Parameters).Drain }, given: givenDrain},
	{name: "reconnect", ptr: func(o any) any { return &o.(*Parameters).Reconnect }},
	{name: "bind", ptr: func(o any) any { return &o.(*Parameters).Bind }},
	{name: "stages", ptr: func(o any) any { return &o.(*Parameters).Stages }},
}

func findField(fields []field, name string) (field, bool) {
	for _, f := range fields {
		if f.name == name {
			return f, true
		}
	}
	return field{}, false
}

func fieldNames(fields []field) []string {
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = f.name
	}
	return out
}

// decodeObject stores the fields of obj into dst, reporting unknown ones.
func decodeObject(dst any, fields []field, obj *object, path string, l *errList) {
	strictjson.Fields(obj, path, fieldNames(fields), l, func(key string, v any, path string) {
		f, _ := findField(fields, key)
		decodeField(dst, f, v, path, l)
	})
}

// decodeField stores one decoded JSON value v into field f of dst.
func decodeField(dst any, f field, v any, path string, l *errList) {
	if _, ok := v.(string); f.secret && !ok && v != nil {
		l.Add(path, "%s is not a string (the value is not shown: it is a secret)", kindOf(v))
		return
	}
	n := len(l.Errs)
	decodeValue(f.ptr(dst), v, path, l)
	if len(l.Errs) != n || f.given == 0 {
		return
	}
	switch d := dst.(type) {
	case *Parameters:
		d.given |= f.given
		d.defaulted &^= f.given
	case *ClientGroup:
		d.given |= f.given
	case *Churn:
		d.given |= f.given
	case *Server:
		d.given |= f.given
	}
}

// decodeValue stores v into the Go value dst points to, reporting a wrong type or a value the
// Go type cannot hold. Range checks that depend on the scenario are Validate's.
func decodeValue(dst, v any, path string, l *errList) {
	switch d := dst.(type) {
	case *string:
		s, ok := v.(string)
		if !ok {
			l.Add(path, "%s is not a string", show(v))
			return
		}
		*d = s
	case *Type:
		s, ok := v.(string)
		if !ok {
			l.Add(path, "%s is not a scenario type (want a string such as \"Fan-Out\")", show(v))
			return
		}
		*d = Type(s)
	case *Reconnect:
		s, ok := v.(string)
		if !ok {
			l.Add(path, "%s is not a reconnect policy (want \"off\" or \"backoff\")", show(v))
			return
		}
		*d = Reconnect(s)
	case *Arrival:
		s, ok := v.(string)
		if !ok {
			l.Add(path, "%s is not an arrival (want \"constant\", \"poisson\" or \"burst\")", show(v))
			return
		}
		*d = Arrival(s)
	case *bool:
		b, ok := v.(bool)
		if !ok {
			l.Add(path, "%s is not a boolean (want true or false)", show(v))
			return
		}
		*d = b
	case *int:
		n, ok := integer(v)
		if !ok {
			l.Add(path, "%s is not an integer", show(v))
			return
		}
		*d = n
	case *byte: // QoS
		n, ok := integer(v)
		if !ok || n < 0 || n > 2 {
			l.Add(path, "%s is not a QoS (want 0, 1 or 2)", show(v))
			return
		}
		*d = byte(n)
	case *float64:
		x, ok := number(v)
		if !ok {
			l.Add(path, "%s is not a number", show(v))
			return
		}
		*d = x
	case *time.Duration:
		t, ok := seconds(v)
		if !ok {
			l.Add(path, "%s is not a time span (want seconds, or a Go duration such as \"90s\")", show(v))
			return
		}
		*d = t
	case sizeField:
		if str, isStr := v.(string); isStr && d.dist != nil && isSizeDist(str) {
			sd, err := ParseSizeDist(str)
			if err != nil {
				l.Add(path, "%v", err)
				return
			}
			*d.p, *d.dist = sd.Max(), sd
			return
		}
		if d.dist != nil {
			*d.dist = nil
		}
		n, ok := size(v)
		if !ok {
			l.Add(path, "%s is not a size (want bytes, or a size such as \"64KiB\")", show(v))
			return
		}
		*d.p = n
	case retainHandlingField:
		n, ok := integer(v)
		if !ok || n < 0 || n > maxRetainHandling {
			l.Add(path, "%s %s", show(v), notRetainHandling)
			return
		}
		*d.p = byte(n)
	case *Version:
		ver, ok := version(v)
		if !ok {
			l.Add(path, "%s is not an MQTT protocol version (want 3 or 4 for 3.1.1, 5 for 5.0, or \"3.1\")", show(v))
			return
		}
		*d = ver
	case *[]string:
		decodeStrings(d, v, path, l)
	case *[]Property:
		decodeProperties(d, v, path, l)
	case *[]Stage:
		if v == nil {
			*d = nil
			return
		}
		decodeStages(d, v, path, l)
	case groupSlot:
		if v == nil {
			*d.g = nil
			return
		}
		obj, ok := v.(*object)
		if !ok {
			l.Add(path, "%s is not a client group (want an object)", show(v))
			return
		}
		if *d.g == nil {
			*d.g = defaultGroup(d.prefix)
		}
		decodeObject(*d.g, groupFields, obj, path, l)
	case *[]*ClientGroup:
		decodeGroups(d, v, path, l)
	case *[]Behaviour:
		var names []string
		decodeStrings(&names, v, path, l)
		*d = nil
		for _, n := range names {
			*d = append(*d, Behaviour(n))
		}
	case **Churn:
		if v == nil {
			*d = nil
			return
		}
		obj, ok := v.(*object)
		if !ok {
			l.Add(path, "%s is not a churn (want {\"fraction\": 0.1, \"at_sec\": 20})", show(v))
			return
		}
		if *d == nil {
			*d = &Churn{}
		}
		decodeObject(*d, churnFields, obj, path, l)
	case serverSlot:
		if v == nil {
			*d.s = nil
			return
		}
		if *d.s == nil {
			*d.s = &Server{Port: 1883}
		}
		decodeValue(*d.s, v, path, l)
	case *Server:
		obj, ok := v.(*object)
		if !ok {
			l.Add(path, "%s is not a server (want an object)", show(v))
			return
		}
		decodeObject(d, serverFields, obj, path, l)
	case *Parameters:
		obj, ok := v.(*object)
		if !ok {
			l.Add(path, "%s is not a parameter set (want an object)", show(v))
			return
		}
		decodeObject(d, paramFields, obj, path, l)
	default:
		panic(fmt.Sprintf("BUG: scenario: no decoder for %T", dst))
	}
}

// decodeGroups decodes "groups": an array of client group objects.
func decodeGroups(d *[]*ClientGroup, v any, path string, l *errList) {
	arr, ok := v.([]any)
	if !ok {
		l.Add(path, "%s is not a list of client groups (want [{\"name\": ..., \"behaviours\": ..., ...}, ...])", show(v))
		return
	}
	out := make([]*ClientGroup, 0, len(arr))
	for i, e := range arr {
		p := strictjson.Index(path, i)
		obj, ok := e.(*object)
		if !ok {
			l.Add(p, "%s is not a client group (want an object)", show(e))
			continue
		}
		g := defaultClientGroup()
		decodeObject(g, clientGroupFields, obj, p, l)
		out = append(out, g)
	}
	*d = out
}

func decodeStrings(d *[]string, v any, path string, l *errList) {
	if s, ok := v.(string); ok {
		*d = []string{s}
		return
	}
	arr, ok := v.([]any)
	if !ok {
		l.Add(path, "%s is not a string or an array of strings", show(v))
		return
	}
	out := make([]string, 0, len(arr))
	for i, e := range arr {
		s, ok := e.(string)
		if !ok {
			l.Add(strictjson.Index(path, i), "%s is not a string", show(e))
			continue
		}
		out = append(out, s)
	}
	*d = out
}

func decodeProperties(d *[]Property, v any, path string, l *errList) {
	arr, ok := v.([]any)
	if !ok {
		l.Add(path, "%s is not a property list (want [{\"name\": ..., \"value\": ...}, ...])", show(v))
		return
	}
	out := make([]Property, 0, len(arr))
	for i, e := range arr {
		p := strictjson.Index(path, i)
		obj, ok := e.(*object)
		if !ok {
			l.Add(p, "%s is not a property (want {\"name\": ..., \"value\": ...})", show(e))
			continue
		}
		var prop Property
		var val any
		hasVal := false
		strictjson.Fields(obj, p, []string{"name", "value", "key"}, l, func(key string, v any, path string) {
			if key == "value" {
				val, hasVal = v, true
				return
			}
			s, ok := v.(string)
			switch {
			case !ok:
				l.Add(path, "%s is not a string", show(v))
			case key == "name":
				prop.Name = s
			default:
				prop.Key = s
			}
		})
		def, known := propertyByName(prop.Name)
		switch {
		case prop.Name == "":
			l.Add(p+".name", "missing (want an MQTT 5 property name such as \"user_property\")")
			continue
		case !known:
			l.Add(p+".name", "%s is not an MQTT 5 property%s", show(prop.Name), suggest(prop.Name, propertyNames()))
			continue
		case !hasVal:
			l.Add(p+".value", "missing")
			continue
		}
		prop.ID = def.id
		if def.kind == propNum {
			n, ok := integer(val)
			if !ok || n < 0 || uint64(n) < def.min || uint64(n) > def.max {
				l.Add(p+".value", "%s is not a valid %s (want an integer %d to %d)", show(val), prop.Name, def.min, def.max)
				continue
			}
			prop.Num = uint32(n)
		} else {
			s, ok := val.(string)
			if !ok {
				l.Add(p+".value", "%s is not a string", show(val))
				continue
			}
			prop.Str = s
		}
		if prop.Key != "" && def.kind != propPair {
			l.Add(p+".key", "%s has no key (only user_property has)", prop.Name)
			continue
		}
		out = append(out, prop)
	}
	*d = out
}

// integer, number and seconds read a decoded JSON value.
var (
	integer = strictjson.Integer
	number  = strictjson.Number
)

// maxSpan bounds time spans so that they fit in a time.Duration with room to add.
const maxSpan = 100 * 365 * 24 * time.Hour

// seconds reads a time span: a number of seconds or a Go duration string.
func seconds(v any) (time.Duration, bool) { return strictjson.Seconds(v, maxSpan) }

// size reads a byte count: an integer or a string ParseSize reads.
func size(v any) (int, bool) {
	if n, ok := integer(v); ok {
		return n, n > math.MinInt32 && n < math.MaxInt32
	}
	s, ok := v.(string)
	if !ok {
		return 0, false
	}
	n, err := ParseSize(s)
	return n, err == nil
}

// SizeUnits are the units ParseSize takes, for messages.
const SizeUnits = bytesize.Units

// ParseSize reads a byte count as scenario files and mqblast's flags write it (bytesize.Parse).
func ParseSize(s string) (int, error) { return bytesize.Parse(s) }

// version reads a protocol_version: 3 and 4 are MQTT 3.1.1 (xmq_scn writes 3), 5 is 5.0,
// 3.1 is MQTT 3.1, and the strings "3.1", "3.1.1", "5" and "5.0" say the same.
func version(v any) (Version, bool) {
	if s, ok := v.(string); ok {
		switch s {
		case "3.1":
			return V31, true
		case "3.1.1":
			return V311, true
		case "5", "5.0":
			return V5, true
		}
		return 0, false
	}
	if x, ok := number(v); ok && x == 3.1 {
		return V31, true
	}
	n, ok := integer(v)
	switch {
	case !ok:
		return 0, false
	case n == 3 || n == 4:
		return V311, true
	case n == 5:
		return V5, true
	}
	return 0, false
}
