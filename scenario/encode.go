package scenario

import (
	"encoding/json"

	"github.com/mqblast/mqblast/internal/secret"
)

// RedactedPassword replaces a non-empty server password in MarshalJSON's output, so that
// result documents, which embed the effective scenario, do not carry it (secret.Marker).
const RedactedPassword = secret.Marker

// MarshalJSON writes the scenario in the file format, with every default spelled out: the
// effective scenario of a run. xmq_scn's fields come first; mqblast's additions are written
// only when they differ from their defaults. A server password is written as
// RedactedPassword.
func (s *Scenario) MarshalJSON() ([]byte, error) {
	type jsonProp struct {
		Name  string `json:"name"`
		Key   string `json:"key,omitempty"`
		Value any    `json:"value"`
	}
	type jsonGroup struct {
		IDPrefix          string `json:"id_prefix"`
		ProtocolVersion   any    `json:"protocol_version"`
		ClientCount       int    `json:"client_count"`
		QoS               byte   `json:"qos"`
		CleanSession      bool   `json:"clean_session"`
		Topics            any    `json:"topics,omitempty"`
		Retain            bool   `json:"retain,omitempty"`
		NoLocal           bool   `json:"no_local,omitempty"`
		RetainAsPublished bool   `json:"retain_as_published,omitempty"`
		RetainHandling    byte   `json:"retain_handling,omitempty"`
		ConnectProperties any    `json:"connect_properties,omitempty"`
		PublishProperties any    `json:"publish_properties,omitempty"`
		ClientID          string `json:"client_id,omitempty"`
		CredentialsFile   string `json:"credentials_file,omitempty"`
		Arrival           string `json:"arrival,omitempty"`
		BurstSize         int    `json:"burst_size,omitempty"`
	}
	type jsonServer struct {
		Hostname string   `json:"hostname"`
		Port     int      `json:"port"`
		Username string   `json:"username"`
		Password string   `json:"password"`
		Brokers  []string `json:"brokers,omitempty"`
		Scheme   string   `json:"scheme,omitempty"`
		Path     string   `json:"path,omitempty"`
		// The client certificate's files or CA: paths, never key material.
		Cert        string `json:"cert,omitempty"`
		Key         string `json:"key,omitempty"`
		ClientCA    string `json:"client_ca,omitempty"`
		ClientCAKey string `json:"client_ca_key,omitempty"`
		CertSubject string `json:"client_cert_subject,omitempty"`
		CertSAN     string `json:"client_cert_san,omitempty"`
	}
	type jsonStage struct {
		Duration    float64 `json:"duration_sec"`
		PublishRate float64 `json:"publish_rate"`
		Ramp        bool    `json:"ramp,omitempty"`
	}
	type jsonParams struct {
		ConnectionRate  float64     `json:"connection_rate"`
		Duration        float64     `json:"duration_sec"`
		PayloadSize     any         `json:"payload_size"`
		PublishRate     float64     `json:"publish_rate"`
		KeepAlive       float64     `json:"keep_alive_sec"`
		MaxInflight     int         `json:"max_inflight_messages"`
		MessageCount    int         `json:"message_count"`
		Warmup          float64     `json:"warmup_sec"`
		Drain           float64     `json:"drain_sec"`
		Payload         string      `json:"payload,omitempty"`
		PayloadTemplate string      `json:"payload_template,omitempty"`
		Measure         string      `json:"measure,omitempty"`
		PayloadFile     string      `json:"payload_file,omitempty"`
		PayloadOrder    string      `json:"payload_order,omitempty"`
		Reconnect       string      `json:"reconnect,omitempty"`
		Bind            []string    `json:"bind,omitempty"`
		Stages          []jsonStage `json:"stages,omitempty"`
	}
	type jsonScenario struct {
		Name        string      `json:"name"`
		Type        Type        `json:"type"`
		Comments    []string    `json:"comments,omitempty"`
		Publishers  *jsonGroup  `json:"publishers,omitempty"`
		Subscribers *jsonGroup  `json:"subscribers,omitempty"`
		Server      *jsonServer `json:"server,omitempty"`
		Parameters  jsonParams  `json:"parameters"`
		Thresholds  []string    `json:"thresholds,omitempty"`
		Groups      []any       `json:"groups,omitempty"`
		ClientID    string      `json:"client_id,omitempty"`
		Credentials string      `json:"credentials_file,omitempty"`
	}
	props := func(ps []Property) any {
		var out []jsonProp
		for _, p := range ps {
			jp := jsonProp{Name: p.Name, Key: p.Key, Value: p.Str}
			if d, _ := propertyByName(p.Name); d.kind == propNum {
				jp.Value = p.Num
			}
			out = append(out, jp)
		}
		if out == nil {
			return nil
		}
		return out
	}
	group := func(g *Group) *jsonGroup {
		if g == nil {
			return nil
		}
		jg := &jsonGroup{
			IDPrefix:          g.IDPrefix,
			ProtocolVersion:   3, // xmq_scn's number for MQTT 3.1.1
			ClientCount:       g.ClientCount,
			QoS:               g.QoS,
			CleanSession:      g.CleanSession,
			Retain:            g.Retain,
			NoLocal:           g.NoLocal,
			RetainAsPublished: g.RetainAsPublished,
			RetainHandling:    g.RetainHandling,
			ConnectProperties: props(g.ConnectProperties),
			PublishProperties: props(g.PublishProperties),
			ClientID:          g.ClientID,
			CredentialsFile:   g.CredentialsFile,
			Arrival:           string(g.Arrival),
			BurstSize:         g.BurstSize,
		}
		switch g.ProtocolVersion {
		case V31:
			jg.ProtocolVersion = "3.1"
		case V5:
			jg.ProtocolVersion = 5
		}
		switch len(g.Topics) {
		case 0:
		case 1:
			jg.Topics = g.Topics[0]
		default:
			jg.Topics = g.Topics
		}
		return jg
	}
	p := &s.Parameters
	out := jsonScenario{
		Name:        s.Name,
		Type:        s.Type,
		Comments:    s.Comments,
		Publishers:  group(s.Publishers),
		Subscribers: group(s.Subscribers),
		Thresholds:  s.Thresholds,
		ClientID:    s.ClientID,
		Credentials: s.CredentialsFile,
		Parameters: jsonParams{
			ConnectionRate:  p.ConnectionRate,
			Duration:        p.Duration.Seconds(),
			PayloadSize:     sizeValue(p.PayloadSize, p.PayloadSizes),
			PublishRate:     p.PublishRate,
			KeepAlive:       p.KeepAlive.Seconds(),
			MaxInflight:     p.MaxInflight,
			MessageCount:    p.MessageCount,
			Warmup:          p.Warmup.Seconds(),
			Drain:           p.Drain.Seconds(),
			Payload:         p.Payload,
			PayloadTemplate: p.PayloadTemplate,
			Measure:         string(p.Measure),
			PayloadFile:     p.PayloadFile,
			PayloadOrder:    p.PayloadOrder,
			Bind:            p.Bind,
		},
	}
	for _, st := range p.Stages {
		out.Parameters.Stages = append(out.Parameters.Stages, jsonStage{Duration: st.Duration.Seconds(),
			PublishRate: st.PublishRate, Ramp: st.Ramp})
	}
	if p.Reconnect != ReconnectOff {
		out.Parameters.Reconnect = string(p.Reconnect)
	}
	for _, g := range s.Groups {
		if g != nil {
			out.Groups = append(out.Groups, marshalClientGroup(g, group(&g.Group), props))
		}
	}
	if sv := s.Server; s.HasServer() || sv.Username != "" || sv.Password != "" || sv.ClientCert.Given() {
		c := sv.ClientCert
		js := &jsonServer{Hostname: sv.Hostname, Port: sv.Port, Username: sv.Username, Brokers: sv.Brokers,
			Scheme: sv.Scheme, Path: sv.Path, Cert: c.Cert, Key: c.Key, ClientCA: c.CA, ClientCAKey: c.CAKey, CertSubject: c.Subject, CertSAN: c.SAN}
		if sv.Password != "" {
			js.Password = RedactedPassword
		}
		out.Server = js
	}
	return json.Marshal(out)
}

// jsonClientGroup is a "groups" entry as MarshalJSON writes it, its own fields around those
// of a publisher or subscriber group, in the reference's order.
type jsonClientGroup struct {
	Name              string         `json:"name"`
	Behaviours        []string       `json:"behaviours"`
	IDPrefix          string         `json:"id_prefix"`
	ProtocolVersion   any            `json:"protocol_version"`
	ClientCount       int            `json:"client_count"`
	QoS               byte           `json:"qos"`
	CleanSession      bool           `json:"clean_session"`
	SessionExpiry     *float64       `json:"session_expiry_sec,omitempty"`
	KeepAlive         float64        `json:"keep_alive_sec"`
	Topics            any            `json:"topics,omitempty"`
	Filters           []string       `json:"filters,omitempty"`
	ResponseTopic     string         `json:"response_topic,omitempty"`
	Fraction          *float64       `json:"fraction,omitempty"`
	PublishRate       *float64       `json:"publish_rate,omitempty"`
	PayloadSize       any            `json:"payload_size,omitempty"`
	PayloadTemplate   string         `json:"payload_template,omitempty"`
	Measure           string         `json:"measure,omitempty"`
	PayloadFile       string         `json:"payload_file,omitempty"`
	PayloadOrder      string         `json:"payload_order,omitempty"`
	Start             float64        `json:"start_sec,omitempty"`
	ExpectDelivery    *bool          `json:"expect_delivery,omitempty"`
	Retain            bool           `json:"retain,omitempty"`
	NoLocal           bool           `json:"no_local,omitempty"`
	RetainAsPublished bool           `json:"retain_as_published,omitempty"`
	RetainHandling    byte           `json:"retain_handling,omitempty"`
	ConnectProperties any            `json:"connect_properties,omitempty"`
	PublishProperties any            `json:"publish_properties,omitempty"`
	Server            map[string]any `json:"server,omitempty"`
	Churn             map[string]any `json:"churn,omitempty"`
	Reconnect         string         `json:"reconnect,omitempty"`
	ClientID          string         `json:"client_id,omitempty"`
	CredentialsFile   string         `json:"credentials_file,omitempty"`
	Arrival           string         `json:"arrival,omitempty"`
	BurstSize         int            `json:"burst_size,omitempty"`
}

// marshalClientGroup returns the "groups" entry of g; jg is g's group as MarshalJSON
// writes a publisher or subscriber group, props its property lists' form.
func marshalClientGroup(g *ClientGroup, jg any, props func([]Property) any) any {
	inner, _ := json.Marshal(jg)
	var common struct {
		ProtocolVersion any `json:"protocol_version"`
	}
	_ = json.Unmarshal(inner, &common)
	out := jsonClientGroup{Name: g.Name, IDPrefix: g.IDPrefix, ProtocolVersion: common.ProtocolVersion,
		ClientCount: g.ClientCount, QoS: g.QoS, CleanSession: g.CleanSession, KeepAlive: g.KeepAlive.Seconds(),
		Filters: g.Filters, ResponseTopic: g.ResponseTopic, Retain: g.Retain, NoLocal: g.NoLocal, RetainAsPublished: g.RetainAsPublished,
		RetainHandling: g.RetainHandling, ConnectProperties: props(g.ConnectProperties), PublishProperties: props(g.PublishProperties),
		ClientID: g.ClientID, CredentialsFile: g.CredentialsFile,
		Arrival: string(g.Arrival), BurstSize: g.BurstSize}
	for _, b := range g.Behaviours {
		out.Behaviours = append(out.Behaviours, string(b))
	}
	if g.given&cgGivenSessionExpiry != 0 {
		v := g.SessionExpiry.Seconds()
		out.SessionExpiry = &v
	}
	if g.given&cgGivenReconnect != 0 {
		out.Reconnect = string(g.Reconnect)
	}
	switch len(g.Topics) {
	case 0:
	case 1:
		out.Topics = g.Topics[0]
	default:
		out.Topics = g.Topics
	}
	if g.Publishes() {
		rate := g.PublishRate
		out.PublishRate, out.PayloadSize, out.Start = &rate, sizeValue(g.PayloadSize, g.PayloadSizes), g.Start.Seconds()
		out.PayloadTemplate, out.Measure = g.PayloadTemplate, string(g.Measure)
		out.PayloadFile, out.PayloadOrder = g.PayloadFile, g.PayloadOrder
		if g.has(BehaviourPublish) {
			f := g.Fraction
			out.Fraction = &f
		}
		if !g.ExpectDelivery {
			no := false
			out.ExpectDelivery = &no
		}
	}
	if sv := g.Server; sv != nil {
		out.Server = map[string]any{}
		switch {
		case len(sv.Brokers) > 0:
			out.Server["brokers"] = sv.Brokers
		case sv.Hostname != "":
			out.Server["hostname"], out.Server["port"] = sv.Hostname, sv.Port
		}
		if sv.Username != "" {
			out.Server["username"] = sv.Username
		}
		if sv.Password != "" {
			out.Server["password"] = RedactedPassword
		}
		c := sv.ClientCert
		for k, v := range map[string]string{"cert": c.Cert, "key": c.Key, "client_ca": c.CA, "client_ca_key": c.CAKey, "client_cert_subject": c.Subject, "client_cert_san": c.SAN} {
			if v != "" {
				out.Server[k] = v
			}
		}
	}
	if c := g.Churn; c != nil {
		out.Churn = map[string]any{"at_sec": c.At.Seconds(), "clean_session": c.CleanSession}
		if c.given&cgGivenFraction != 0 || c.Rate == 0 {
			out.Churn["fraction"] = c.Fraction
		}
		if c.Down > 0 {
			out.Churn["down_sec"] = c.Down.Seconds()
		}
		if c.Rate > 0 {
			out.Churn["rate"] = c.Rate
		}
	}
	return out
}

// sizeValue is payload_size as a file writes it: the distribution's text, or the size.
func sizeValue(n int, d *SizeDist) any {
	if d != nil {
		return d.Text
	}
	return n
}
