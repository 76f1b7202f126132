package scenario

import (
	"fmt"

	"github.com/mqblast/mqblast/internal/payloadtpl"
)

// Measure is where a group's messages carry their measurement ("measure").
type Measure string

// Measurement carriers.
const (
	// MeasureHeader: the binary measurement bytes start the payload (the default).
	MeasureHeader Measure = "header"
	// MeasureMark: the payload is the template's alone; the measurement travels as the
	// text mark the template places with {{mark}}, which the receiver finds anywhere in it.
	MeasureMark Measure = "mark"
	// MeasureNone: the payload is the template's alone, unmeasured: copies received are
	// counted as unmeasured, and none is expected (so none is lost).
	MeasureNone Measure = "none"
	// MeasureProperty: MQTT 5 only; the payload is the template's alone, and the
	// measurement bytes travel as the message's Correlation Data, or, when the group gives
	// one in its publish_properties, as the text mark in a User Property (mqblast-mark); a
	// request's Correlation Data is its own header already. Receivers must be MQTT 5 too: a
	// 3.1.1 receiver gets no properties.
	MeasureProperty Measure = "property"
)

// checkMeasure checks a publishing group's carrier m at path (the prefix of measure) for
// its template src or payload file file; g is the group's settings.
func checkMeasure(l *errList, path string, m Measure, src, file string, g *Group) {
	switch m {
	case "", MeasureHeader:
	case MeasureProperty:
		switch {
		case src == "" && file == "":
			l.Add(path+"measure", "property needs a payload_template or a payload_file (the payload is then theirs alone)")
		case g != nil && g.ProtocolVersion != V5:
			l.Add(path+"measure", "property needs protocol_version 5 (the measurement travels as Correlation Data; this group is MQTT %s: use mark)", g.ProtocolVersion)
		}
	case MeasureMark:
		if t, err := payloadtpl.Compile(src); file == "" && (src == "" || (err == nil && !t.HasMark())) {
			l.Add(path+"measure", "mark, but the payload template has no {{mark}} to carry it (add one, e.g. inside a JSON string)")
		}
	case MeasureNone:
		if src == "" && file == "" {
			l.Add(path+"measure", "none needs a payload_template or a payload_file (the payload is then theirs alone)")
		}
	default:
		l.Add(path+"measure", "%q is not a measurement carrier (want header, property, mark or none)", string(m))
	}
}

// bodySize is payload size n as the size checks see it: a payload that carries no header
// (measure mark or none) may be shorter than one.
func bodySize(n int, m Measure) int {
	if m == MeasureMark || m == MeasureNone || m == MeasureProperty {
		return max(n, MinPayloadSize)
	}
	return n
}

// templateSize is the payload size of messages rendered from template src for client ids
// of at most idLen bytes: the measurement bytes and the longest rendering (the smallest
// payload for a template that does not compile, which Validate reports).
func templateSize(src string, idLen int, m Measure) int {
	t, err := payloadtpl.Compile(src)
	if err != nil {
		return MinPayloadSize
	}
	if m == MeasureMark || m == MeasureNone || m == MeasureProperty {
		return t.MaxLen(idLen)
	}
	return PayloadTextAt + t.MaxLen(idLen)
}

// idLen bounds the length of a group's client ids: its text and up to ten digits (an
// index of any shard of the run).
func idLen(g *Group) int { return len(g.IDPrefix) + len(g.IDSuffix) + max(g.IDPad, 10) }

// checkTemplate checks payload template src at path (the prefix of payload_template).
func checkTemplate(l *errList, path, src string) {
	if src == "" {
		return
	}
	if _, err := payloadtpl.Compile(src); err != nil {
		l.Add(path+"payload_template", "%v", err)
	}
}

// compilePayload compiles a publishing group's payload template (nil: none). Validate has
// checked it.
func compilePayload(src string) *payloadtpl.Template {
	if src == "" {
		return nil
	}
	t, err := payloadtpl.Compile(src)
	if err != nil {
		panic(fmt.Sprintf("BUG: scenario: payload template not validated: %v", err))
	}
	return t
}

// Measurement describes where each publishing group's messages carry their measurement
// (group name, carrier, payload: "fill", "literal", "template" or "file"), when one of
// them has a payload template or file; nil otherwise.
func (p *Plan) Measurement() (groups, carriers, payloads []string) {
	sh := p.shared
	own := false
	for gid, g := range sh.groups {
		if sh.g[gid].pubs > 0 && (g.PayloadTemplate != "" || g.PayloadFile != "") {
			own = true
		}
	}
	if !own {
		return nil, nil, nil
	}
	c := p.Carriers()
	for gid, g := range sh.groups {
		if sh.g[gid].pubs == 0 {
			continue
		}
		pl := "fill"
		switch {
		case g.PayloadTemplate != "":
			pl = "template"
		case g.PayloadFile != "":
			pl = "file"
		case sh.s.Parameters.Payload != "":
			pl = "literal"
		}
		groups, carriers, payloads = append(groups, g.Name), append(carriers, string(c[gid])), append(payloads, pl)
	}
	return groups, carriers, payloads
}

// Carriers returns each group's measurement carrier, in the order of Groups (header for a
// group that publishes nothing or gives none).
func (p *Plan) Carriers() []Measure {
	out := make([]Measure, len(p.shared.groups))
	for gid, g := range p.shared.groups {
		out[gid] = MeasureHeader
		if p.shared.g[gid].pubs > 0 && g.Measure != "" {
			out[gid] = g.Measure
		}
	}
	return out
}
