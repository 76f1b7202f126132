package bench

import (
	"fmt"
	"strconv"

	"github.com/mqblast/mqblast/codec"
	"github.com/mqblast/mqblast/reactor"
	"github.com/mqblast/mqblast/scenario"
)

// EngineConfig maps a plan onto the engine: one ClientSpec per plan client (derived from
// the index when asked, so a million clients need no million specs), the brokers, the
// source addresses and the connect rate. brokers overrides the plan's (the embedded
// broker's address when the scenario names none). idStart, when not 0, numbers client ids
// from it (id_prefix + idStart + index, emqtt-bench's -n); only ids change, not topics.
func EngineConfig(p *scenario.Plan, brokers []string, idStart int) (reactor.Config, error) {
	s := p.Scenario()
	if len(brokers) == 0 {
		brokers = p.Brokers()
	}
	if len(brokers) == 0 {
		return reactor.Config{}, fmt.Errorf("scenario %q names no broker", s.Name)
	}
	props := map[*scenario.Group]*codec.Properties{}
	for _, g := range []*scenario.Group{s.Publishers, s.Subscribers} {
		if g == nil || g.ProtocolVersion != scenario.V5 || len(g.ConnectProperties) == 0 {
			continue
		}
		cp, err := connectProps(g.ConnectProperties)
		if err != nil {
			return reactor.Config{}, err
		}
		props[g] = cp
	}
	par := &s.Parameters
	user, pass := s.Server.Username, s.Server.Password
	return reactor.Config{
		Brokers:     brokers,
		SourceAddrs: p.Sources(),
		Clients:     p.Len(),
		ConnectRate: p.ConnectRate(),
		Reconnect:   par.Reconnect == scenario.ReconnectBackoff,
		Client: func(i int) reactor.ClientSpec {
			c := p.Client(i)
			spec := reactor.ClientSpec{
				Broker: c.Broker, ID: c.ID, Username: user, Password: pass,
				Version: byte(c.Group.ProtocolVersion), CleanStart: c.Group.CleanSession,
				Keepalive: par.KeepAlive, Props: props[c.Group],
			}
			if idStart != 0 {
				spec.ID = c.Group.IDPrefix + strconv.Itoa(idStart+c.Index)
			}
			if c.Source >= 0 {
				spec.Source = p.Source(c.Source)
			}
			return spec
		},
	}, nil
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
