package bench

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mqblast/mqblast/codec"
	"github.com/mqblast/mqblast/internal/payloadtpl"
	"github.com/mqblast/mqblast/reactor"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/scenario"
)

// EngineConfig maps a plan onto the engine: one ClientSpec per plan client (derived from
// the index when asked, so a million clients need no million specs), the brokers, the
// source addresses and the connect rate. brokers overrides the plan's (the embedded
// broker's address when the scenario names none). idStart, when not 0, numbers client ids
// from it (idStart + index in the group's id, emqtt-bench's -n); only ids change, not topics.
func EngineConfig(p *scenario.Plan, brokers []string, idStart int) (reactor.Config, error) {
	s := p.Scenario()
	if len(brokers) == 0 {
		brokers = p.Brokers()
	}
	if len(brokers) == 0 {
		return reactor.Config{}, fmt.Errorf("scenario %q names no broker", s.Name)
	}
	if own := p.OwnBrokers(); len(own) > 0 {
		brokers = append(append([]string(nil), brokers...), own...)
	}
	base := len(brokers) - len(p.OwnBrokers()) // the first group server's index
	groups := p.GroupSettings()
	props := map[*scenario.Group]*codec.Properties{}
	for _, g := range groups {
		if g == nil || g.ProtocolVersion != scenario.V5 || len(g.ConnectProperties) == 0 {
			continue
		}
		cp, err := connectProps(g.ConnectProperties)
		if err != nil {
			return reactor.Config{}, err
		}
		props[g] = cp
	}
	pubProps := map[*scenario.Group]*codec.Properties{}
	for _, g := range groups {
		if g == nil || g.ProtocolVersion != scenario.V5 || len(g.PublishProperties) == 0 {
			continue
		}
		pp, err := publishProps(g.PublishProperties)
		if err != nil {
			return reactor.Config{}, err
		}
		pubProps[g] = pp
	}
	par := &s.Parameters
	if n := p.Publishers(); n > reactor.MaxPublishers {
		return reactor.Config{}, fmt.Errorf("scenario %q: %d publishers: the measurement header numbers at most %d; split the run with --shard over several scenarios",
			s.Name, n, reactor.MaxPublishers)
	}
	certs, err := ClientCerts(p)
	if err != nil {
		return reactor.Config{}, err
	}
	payload := max(p.MaxPayloadSize(), reactor.HeaderSize)
	reconnect, reconnectClient := p.Reconnects()
	// Receivers look for text marks when a group of the run places them, and in a run
	// that publishes nothing (mqblast sub): the publishers are another process's.
	carriers := p.Carriers()
	marks := slices.Contains(carriers, scenario.MeasureMark) || slices.Contains(carriers, scenario.MeasureProperty) || p.Publishers() == 0
	draws := &sizeDraws{m: map[*scenario.SizeDist]*reactor.SizeDraw{}}
	return reactor.Config{
		Marks:        marks,
		MaxPayload:   payload,
		Payload:      []byte(par.Payload), // from byte scenario.PayloadTextAt, which is reactor.MeasuredSize
		MaxInbound:   inboundLimit(payload),
		Brokers:      brokers,
		SourceAddrs:  p.Sources(),
		Clients:      p.Len(),
		ConnectRate:  p.ConnectRate(),
		ConnectDelay: p.ConnectDelay(),
		Reconnect:    reconnect,
		// A mixed run's groups may have reconnect policies of their own.
		ReconnectClient: reconnectClient,
		ClientCert:      clientCert(p, certs),
		Client: func(i int) reactor.ClientSpec {
			c := p.Client(i)
			spec := reactor.ClientSpec{
				Broker: c.Broker, ID: c.ID, Username: c.Username, Password: c.Password,
				Version: byte(c.Group.ProtocolVersion), CleanStart: c.Group.CleanSession,
				Keepalive: c.KeepAlive, Props: props[c.Group],
			}
			if c.OwnBroker >= 0 {
				spec.Broker = base + c.OwnBroker
			}
			if idStart != 0 {
				spec.ID = clientID(c, idStart)
			}
			if c.Source >= 0 {
				spec.Source = p.Source(c.Source)
			}
			if c.Role.Subscribes() {
				spec.Subscriptions = make([]codec.Subscription, len(c.Filters))
				for k, f := range c.Filters {
					g := c.Group
					spec.Subscriptions[k] = codec.Subscription{Filter: []byte(f), QoS: codec.QoS(g.QoS),
						NoLocal: g.NoLocal, RetainAsPublished: g.RetainAsPublished, RetainHandling: g.RetainHandling}
				}
			}
			if c.Role.Publishes() {
				pre, n, suf := randTopic(c.Topic)
				spec.Publish = &reactor.PublishSpec{
					RandN: n, TopicSuffix: suf,
					Topic: pre, QoS: c.Group.QoS, Retain: c.Group.Retain, Rate: c.Rate,
					Phase: c.Phase, Count: par.MessageCount, PayloadSize: max(c.PayloadSize, reactor.HeaderSize),
					Number: c.Number, Receivers: c.Receivers, Props: pubProps[c.Group],
					MaxInflight: par.MaxInflight, BurstSize: c.Group.BurstSize,
				}
				if len(c.Topics) > 1 {
					spec.Publish.Topic, spec.Publish.RandN, spec.Publish.TopicSuffix = []byte(c.Topics[0]), 0, nil
					for _, t := range c.Topics {
						spec.Publish.Topics = append(spec.Publish.Topics, []byte(t))
					}
					if rs := c.TopicReceivers; rs != nil && slices.ContainsFunc(rs, func(r int) bool { return r != rs[0] }) {
						spec.Publish.TopicReceivers = rs // the topics reach different receivers
					}
				}
				switch c.Group.Arrival {
				case scenario.ArrivalPoisson:
					spec.Publish.Arrival = reactor.ArrivalPoisson
				case scenario.ArrivalBurst:
					spec.Publish.Arrival = reactor.ArrivalBurst
				}
				if c.ResponseTopic != "" {
					spec.Publish.ResponseTopic = []byte(c.ResponseTopic)
				}
				if d := c.PayloadSizes; d != nil {
					spec.Publish.Sizes = draws.of(d)
				}
				if ts := c.PayloadTemplates; ts != nil {
					spec.Publish.Templates, spec.Publish.RandomOrder = ts, c.PayloadRandom
					if slices.ContainsFunc(ts, (*payloadtpl.Template).PerClient) {
						spec.Publish.ClientID, spec.Publish.ClientIndex = []byte(spec.ID), c.Index
					}
				}
				if c.PayloadTemplate != nil || c.PayloadTemplates != nil {
					switch c.Measure {
					case scenario.MeasureMark:
						spec.Publish.Measure = reactor.MeasureMark
					case scenario.MeasureNone:
						spec.Publish.Measure = reactor.MeasureNone
					case scenario.MeasureProperty:
						// Correlation Data, unless the group sends one of its own: then the
						// mark in a User Property.
						spec.Publish.Measure = reactor.MeasureProperty
						if pp := pubProps[c.Group]; pp != nil && pp.Present&(1<<codec.PropCorrelationData) != 0 {
							spec.Publish.Measure = reactor.MeasureUserProperty
						}
					}
				}
				if t := c.PayloadTemplate; t != nil {
					spec.Publish.Template = t
					if t.PerClient() {
						spec.Publish.ClientID, spec.Publish.ClientIndex = []byte(spec.ID), c.Index
					}
				}
			}
			if c.Respond {
				spec.Respond, spec.RespondQoS = true, c.Group.QoS
			}
			return spec
		},
	}, nil
}

// clientID is client c's id with ids numbered from idStart (not 0).
func clientID(c scenario.Client, idStart int) string {
	return c.Group.ID(idStart + c.Index)
}

// randTopic splits a topic at its first %rand_N placeholder (emqtt-bench's per-message
// random number): prefix, N and suffix; N is 0 when there is none.
func randTopic(t string) (prefix []byte, n int, suffix []byte) {
	i := strings.Index(t, "%rand_")
	if i < 0 {
		return []byte(t), 0, nil
	}
	j := i + len("%rand_")
	k := j
	for k < len(t) && t[k] >= '0' && t[k] <= '9' {
		k++
	}
	n, err := strconv.Atoi(t[j:k])
	if err != nil || n <= 0 {
		return []byte(t), 0, nil
	}
	return []byte(t[:i]), n, []byte(t[k:])
}

// NewRunner prepares the run of a plan (see EngineConfig for brokers and idStart).
func NewRunner(p *scenario.Plan, brokers []string, idStart int) (*Runner, error) {
	cfg, err := EngineConfig(p, brokers, idStart)
	if err != nil {
		return nil, err
	}
	s := p.Scenario()
	par := &s.Parameters
	est := p.Estimate()
	r := &Runner{Engine: cfg, Duration: par.Duration, Warmup: par.Warmup, Drain: par.Drain}
	r.Describe = func(i int) (id, topic string) {
		c := p.Client(i)
		if idStart != 0 {
			return clientID(c, idStart), c.Topic
		}
		return c.ID, c.Topic
	}
	if len(par.Stages) > 0 && est.Publishers > 0 {
		r.Stages, r.BaseRate = par.Stages, par.PublishRate
	} else if est.Publishers > 0 && !s.Mixed() && par.PublishRate > 0 {
		r.BaseRate = par.PublishRate // a steerable run's scale 1
	}
	if !p.Open() {
		r.Stream, r.StreamCycle, r.StreamAlso = p.Stream, p.StreamCycle, p.StreamAlso
		r.RetainedLate = retainedLate(s)
		r.Placement = &Placement{Publishes: p.Publishes, Outside: p.ReceivedOutside, Receives: p.ReceivesOutside}
	}
	if clients, pubs, ok := p.GroupTables(); ok {
		r.Groups = &Groups{Client: clients, Publisher: pubs, Share: p.ShareGroups()}
		n, np := p.GroupCounts()
		numbers := p.GroupNumbers()
		shares := map[int][]int{}
		for k, gid := range r.Groups.Share {
			shares[int(gid)] = append(shares[int(gid)], k)
		}
		for gid, g := range p.Groups() {
			bs := make([]string, len(g.Behaviours))
			for i, b := range g.Behaviours {
				bs[i] = string(b)
			}
			r.Groups.Info = append(r.Groups.Info, result.GroupInfo{Name: g.Name, Behaviours: bs, Clients: n[gid], Publishers: np[gid],
				Numbers: numbers[gid], Shares: shares[gid]})
		}
	}
	for _, st := range p.Storms() {
		r.Storms = append(r.Storms, Storm{At: st.At, Clean: st.Clean, Down: st.Down, Group: st.GroupID, Clients: p.StormClients(st),
			Pick: func(client int) bool { return p.InStorm(st, client) },
			Rate: st.Rate, Pos: func(client int) int { return p.StormPos(st, client) }, Size: st.Clients})
	}
	if !p.Holds() {
		// Every shard runs the messaging phases, also one without publishers (its
		// subscribers measure the window) or without subscribers.
		r.Messaging = true
		r.Subscribers = est.Subscribers
		if r.Drain <= 0 && !p.Open() { // nothing of ours to wait for there
			r.Drain = 2 * time.Second
		}
	}
	return r, nil
}

// retainedLate is Runner.RetainedLate for a plain scenario whose every subscriber gets
// copies of retaining publishers only, by subscriptions that take retained messages: not
// shared (a shared subscription gets none), Retain Handling 0, no Retain As Published (the
// RETAIN flag would not tell a retained copy), one rate without stages. Every publisher
// has published by one period after publishing began; a second more of slack. 0 for the
// others, mixed runs among them (a subscribing group may match no publisher).
func retainedLate(s *scenario.Scenario) time.Duration {
	pub, sub, par := s.Publishers, s.Subscribers, &s.Parameters
	switch s.Type {
	case scenario.TypePointToPoint, scenario.TypeFanIn, scenario.TypeFanOut:
	case scenario.TypeRoundTrip:
		sub = pub
	default:
		return 0
	}
	if s.Mixed() || pub == nil || sub == nil || !pub.Retain || sub.RetainHandling != 0 || sub.RetainAsPublished ||
		len(par.Stages) > 0 || !(par.PublishRate > 0) {
		return 0
	}
	return time.Duration(float64(time.Second)/par.PublishRate) + time.Second
}

// publishProps builds the PUBLISH properties of a group.
func publishProps(list []scenario.Property) (*codec.Properties, error) {
	var p codec.Properties
	for _, x := range list {
		id := codec.PropID(x.ID)
		switch id {
		case codec.PropPayloadFormat:
			p.PayloadFormat = byte(x.Num)
		case codec.PropMessageExpiry:
			p.MessageExpiry = x.Num
		case codec.PropContentType:
			p.ContentType = []byte(x.Str)
		case codec.PropResponseTopic:
			p.ResponseTopic = []byte(x.Str)
		case codec.PropCorrelationData:
			p.CorrelationData = []byte(x.Str)
		case codec.PropUserProperty:
			p.User.Add(x.Key, x.Str)
			continue
		default:
			return nil, fmt.Errorf("publish property %s (0x%02x) is not supported on PUBLISH", x.Name, x.ID)
		}
		p.Set(id)
	}
	return &p, nil
}

// connectProps builds the CONNECT properties of a group.
func connectProps(list []scenario.Property) (*codec.Properties, error) {
	var p codec.Properties
	for _, x := range list {
		id := codec.PropID(x.ID)
		switch id {
		case codec.PropSessionExpiry:
			p.SessionExpiry = x.Num
		case codec.PropReceiveMaximum:
			p.ReceiveMaximum = uint16(x.Num)
		case codec.PropMaximumPacketSize:
			p.MaximumPacketSize = x.Num
		case codec.PropTopicAliasMaximum:
			p.TopicAliasMaximum = uint16(x.Num)
		case codec.PropRequestProblemInfo:
			p.RequestProblemInfo = byte(x.Num)
		case codec.PropRequestResponseInfo:
			p.RequestResponseInfo = byte(x.Num)
		case codec.PropAuthMethod:
			p.AuthMethod = []byte(x.Str)
		case codec.PropAuthData:
			p.AuthData = []byte(x.Str)
		case codec.PropUserProperty:
			p.User.Add(x.Key, x.Str)
			continue
		default:
			return nil, fmt.Errorf("connect property %s (0x%02x) is not supported on CONNECT", x.Name, x.ID)
		}
		p.Set(id)
	}
	return &p, nil
}

// sizeDraws keeps one reactor.SizeDraw per distribution of payload sizes, for the clients'
// specs (Config.Client may be called from several loops at once).
type sizeDraws struct {
	mu sync.Mutex
	m  map[*scenario.SizeDist]*reactor.SizeDraw
}

// of returns d's draw.
func (s *sizeDraws) of(d *scenario.SizeDist) *reactor.SizeDraw {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.m[d]; r != nil {
		return r
	}
	r := &reactor.SizeDraw{Lo: d.Lo, Hi: d.Hi}
	if d.Sizes != nil {
		sum := uint32(0)
		for i, n := range d.Sizes {
			sum += uint32(d.Weights[i])
			r.Sizes, r.Cum = append(r.Sizes, n), append(r.Cum, sum)
		}
	}
	s.m[d] = r
	return r
}
