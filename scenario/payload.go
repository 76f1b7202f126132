package scenario

import (
	"fmt"

	"github.com/mqblast/mqblast/internal/payloadtpl"
)

// templateSize is the payload size of messages rendered from template src for client ids
// of at most idLen bytes: the measurement bytes and the longest rendering (the smallest
// payload for a template that does not compile, which Validate reports).
func templateSize(src string, idLen int) int {
	t, err := payloadtpl.Compile(src)
	if err != nil {
		return MinPayloadSize
	}
	return PayloadTextAt + t.MaxLen(idLen)
}

// idLen bounds the length of a group's client ids: its prefix and up to ten digits (an
// index of any shard of the run).
func idLen(g *Group) int { return len(g.IDPrefix) + 10 }

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
