package scenario

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"time"
)

// Quick describes the scenario of an emqtt-bench style verb (mqblast conn, pub, sub): a
// Type of one client group with the group fields and parameters the verb adds.
type Quick struct {
	Verb   string         // the verb: the scenario's name is Verb-Count
	Type   string         // Connections, Publish or Subscribe
	Group  string         // "publishers" or "subscribers"
	Fields map[string]any // group fields the verb adds (topics, qos ...)
	Params map[string]any // parameters the verb adds (publish_rate ...)

	Count      int
	IntervalMS int     // between connects, unless RateGiven
	Rate       float64 // connects per second over the whole run, with RateGiven
	RateGiven  bool
	Keepalive  int // seconds
	Version    int // 3 (3.1), 4 (3.1.1) or 5 (5.0)
	Clean      bool
	Username   string
	Password   string
	// PasswordFile says that the password comes from a file too: a conflict with Password.
	PasswordFile bool
	Prefix       string // client id prefix
	Duration     time.Duration

	Hosts     string // comma-separated; "": the embedded broker
	Port      int
	PortGiven bool // otherwise TLS and WebSocket take their usual ports
	Secure    bool // TLS (mqtts, or wss with WS)
	WS        bool
	WSPath    string
}

// NewQuick builds and validates the scenario q describes, and returns it with the broker
// addresses of q.Hosts (none without). Its errors name the emqtt-bench flag at fault.
func NewQuick(q Quick) (*Scenario, []string, error) {
	data, brokers, err := QuickFile(q)
	if err != nil {
		return nil, nil, err
	}
	s, err := Parse(q.Verb, data)
	if err != nil {
		return nil, nil, err
	}
	return s, brokers, nil
}

// QuickFile is NewQuick's scenario as its file's JSON (the password in it, when q has one).
func QuickFile(q Quick) ([]byte, []string, error) {
	switch {
	case q.Count <= 0:
		return nil, nil, fmt.Errorf("--count %d: must be at least 1", q.Count)
	case q.Version < 3 || q.Version > 5:
		return nil, nil, fmt.Errorf("--version %d: must be 3 (MQTT 3.1), 4 (3.1.1) or 5 (5.0)", q.Version)
	case q.Keepalive < 0 || q.Keepalive > 65535:
		return nil, nil, fmt.Errorf("--keepalive %d: must be 0..65535 seconds", q.Keepalive)
	case q.Duration <= 0:
		return nil, nil, fmt.Errorf("--duration %v: must be more than 0", q.Duration)
	case q.Password != "" && q.PasswordFile:
		return nil, nil, errors.New("--password and --password-file: give one of them")
	}
	rate := q.Rate
	if !q.RateGiven {
		if q.IntervalMS <= 0 {
			return nil, nil, fmt.Errorf("--interval %d: must be at least 1 ms (or give --rate)", q.IntervalMS)
		}
		rate = 1000 / float64(q.IntervalMS)
	}
	if rate <= 0 {
		return nil, nil, fmt.Errorf("--rate %v: must be more than 0", q.Rate)
	}
	var pv any = q.Version
	if q.Version == 3 {
		pv = "3.1"
	}
	g := map[string]any{"id_prefix": q.Prefix, "protocol_version": pv, "client_count": q.Count, "clean_session": q.Clean}
	for k, v := range q.Fields {
		g[k] = v
	}
	p := map[string]any{"connection_rate": rate, "duration_sec": q.Duration.Seconds(), "keep_alive_sec": q.Keepalive}
	for k, v := range q.Params {
		p[k] = v
	}
	doc := map[string]any{"name": fmt.Sprintf("%s-%d", q.Verb, q.Count), "type": q.Type, q.Group: g, "parameters": p}
	if q.Username != "" || q.Password != "" {
		doc["server"] = map[string]any{"username": q.Username, "password": q.Password}
	}
	data, err := json.Marshal(doc)
	if err != nil {
		return nil, nil, err
	}
	s, err := Parse(q.Verb, data)
	if err != nil {
		return nil, nil, err
	}
	if err := s.Validate(); err != nil {
		return nil, nil, err
	}
	if (q.Secure || q.WS) && q.Hosts == "" {
		return nil, nil, errors.New("--ssl/--tls and --ws need the broker's --host (the embedded broker speaks plain TCP only)")
	}
	if q.Hosts == "" {
		return data, nil, nil
	}
	port := q.Port
	if !q.PortGiven { // the usual ports of TLS and WebSocket listeners
		switch {
		case q.Secure && q.WS:
			port = 8084
		case q.WS:
			port = 8083
		case q.Secure:
			port = 8883
		}
	}
	path, err := quickWSPath(q.WSPath)
	if err != nil && q.WS {
		return nil, nil, err
	}
	var bs []string
	for _, h := range strings.Split(q.Hosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]") // -H [::1] as well as ::1
			bs = append(bs, quickBroker(net.JoinHostPort(h, strconv.Itoa(port)), q.Secure, q.WS, path))
		}
	}
	return data, bs, nil
}

// quickWSPath returns --ws-path as a request path: "/" put in front when it lacks one
// (emqtt-bench users write "mqtt" as well as "/mqtt"), DefaultWSPath for "".
func quickWSPath(p string) (string, error) {
	switch {
	case p == "":
		return DefaultWSPath, nil
	case strings.ContainsAny(p, "?#"):
		return "", fmt.Errorf("--ws-path %q: a query or fragment is not taken (want a path such as /mqtt)", p)
	case !strings.HasPrefix(p, "/"):
		p = "/" + p
	}
	return p, nil
}

// quickBroker returns the broker address of host and port for the quick verbs' --tls/--ssl
// and --ws: host:port (TCP), mqtts://, ws:// or wss:// with path.
func quickBroker(hostPort string, secure, ws bool, path string) string {
	switch {
	case ws && secure:
		return "wss://" + hostPort + path
	case ws:
		return "ws://" + hostPort + path
	case secure:
		return "mqtts://" + hostPort
	}
	return hostPort
}

// QuickTopic turns emqtt-bench topic placeholders into the scenario's: %i the client's
// index, %c its client id, %u the username; %rand_N (a random 1..N drawn per message) is
// kept for the publisher to expand. idStart is the number of the first client.
func QuickTopic(t, username string, idStart int) (string, error) {
	if idStart != 0 && (strings.Contains(t, "%i") || strings.Contains(t, "%c")) {
		return "", errors.New("--startnumber with %i or %c in the topic is not supported: topics number clients from 0")
	}
	t = strings.ReplaceAll(t, "%i", "$clientindex")
	t = strings.ReplaceAll(t, "%c", "$clientid")
	t = strings.ReplaceAll(t, "%u", username)
	return t, nil
}

// QuickPublishRate turns pub's -I (ms between the messages of one client, fractions
// allowed) or --msg-rate (messages per second per client) into the scenario's
// publish_rate; intervalGiven and msgRateGiven say which of the two flags were given.
func QuickPublishRate(intervalMS, msgRate float64, intervalGiven, msgRateGiven bool) (float64, error) {
	switch {
	case msgRateGiven && intervalGiven:
		return 0, errors.New("--msg-rate and -I/--interval-of-msg say the same: give one of them")
	case msgRateGiven:
		if !(msgRate > 0) || math.IsInf(msgRate, 0) {
			return 0, fmt.Errorf("--msg-rate %v: must be more than 0 messages per second, e.g. --msg-rate 100", msgRate)
		}
		return msgRate, nil
	}
	if !(intervalMS > 0) || math.IsInf(intervalMS, 0) {
		return 0, fmt.Errorf("--interval-of-msg %v: must be more than 0 ms, e.g. -I 10 or -I 0.5", intervalMS)
	}
	return 1000 / intervalMS, nil
}

// QuickPub are the flags of `mqblast pub` that make its publisher group: the topic (its
// emqtt-bench placeholders turned into the scenario's, QuickTopic), QoS, payload size and
// retain flag, the rate as -I (ms between messages, fractions allowed) or messages per
// second, a message limit, the in-flight window and the warm-up.
type QuickPub struct {
	Topic         string
	QoS           int
	Size          int
	Retain        bool
	IntervalMS    float64
	MsgRate       float64
	Limit         int
	Inflight      int
	Warmup        time.Duration
	IntervalGiven bool // -I given
	MsgRateGiven  bool // --msg-rate given
	// Stages says that --stages is given, Replaced the flag it replaces that is given too
	// (interval-of-msg, msg-rate or duration; "": none).
	Stages   bool
	Replaced string
	Username string
	IDStart  int
	// Arrival and BurstSize are the group's "arrival" and "burst_size" ("": the default).
	Arrival   string
	BurstSize int
	// PayloadTemplate is --payload-template (parameters.payload_template); SizeGiven says
	// that --size is given too.
	PayloadTemplate string
	SizeGiven       bool
	// PayloadFile is --payload-file (parameters.payload_file).
	PayloadFile string
}

// Parts returns the group fields and the parameters p adds to pub's scenario (Quick.Fields,
// Quick.Params); its errors name the emqtt-bench flag at fault.
func (p QuickPub) Parts() (fields, params map[string]any, err error) {
	if p.Topic == "" {
		return nil, nil, errors.New("--topic: give the topic to publish to, e.g. -t bench/%i")
	}
	rate, err := QuickPublishRate(p.IntervalMS, p.MsgRate, p.IntervalGiven, p.MsgRateGiven)
	if err != nil {
		return nil, nil, err
	}
	if p.Stages && p.Replaced != "" {
		return nil, nil, fmt.Errorf("--stages and --%s: the stages give the rate and the duration; give one of them", p.Replaced)
	}
	t, err := QuickTopic(p.Topic, p.Username, p.IDStart)
	if err != nil {
		return nil, nil, err
	}
	params = map[string]any{"publish_rate": rate, "payload_size": p.Size, "message_count": p.Limit, "warmup_sec": p.Warmup.Seconds()}
	if p.Inflight > 0 {
		params["max_inflight_messages"] = p.Inflight
	}
	fields = map[string]any{"topics": t, "qos": p.QoS, "retain": p.Retain}
	if p.Arrival != "" {
		fields["arrival"] = p.Arrival
	}
	if p.BurstSize != 0 {
		fields["burst_size"] = p.BurstSize
	}
	if p.PayloadTemplate != "" {
		if p.SizeGiven {
			return nil, nil, errors.New("--payload-template and --size: the template's longest rendering gives the payload size; give one of them")
		}
		params["payload_template"] = p.PayloadTemplate
		delete(params, "payload_size")
	}
	if p.PayloadFile != "" {
		if p.SizeGiven {
			return nil, nil, errors.New("--payload-file and --size: the longest payload of the file gives the payload size; give one of them")
		}
		params["payload_file"] = p.PayloadFile
		delete(params, "payload_size")
	}
	return fields, params, nil
}
