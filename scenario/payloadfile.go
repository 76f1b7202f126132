package scenario

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mqblast/mqblast/internal/payloadtpl"
)

// Orders of the payloads of a payload file ("payload_order").
const (
	// OrderRoundRobin sends a publisher's payloads in turn: message k carries payload k
	// modulo their number (the default).
	OrderRoundRobin = "round-robin"
	// OrderRandom draws each message's payload at random.
	OrderRandom = "random"
)

// maxPayloadFiles bounds the payloads one payload_file gives.
const maxPayloadFiles = 100_000

// loadPayloads reads the payloads of a payload file (payload_file): a directory (each
// regular file in it one payload, by name), a JSON-lines file (.jsonl or .ndjson: each
// non-empty line one payload), or any other file (the whole file one payload). Each
// payload is a template (placeholders in double braces; text without any is sent as it
// is), compiled; the error names the file (and line) at fault.
func loadPayloads(path string) ([]*payloadtpl.Template, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	var out []*payloadtpl.Template
	add := func(name string, data []byte) error {
		t, err := payloadtpl.Compile(string(data))
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if len(out) >= maxPayloadFiles {
			return fmt.Errorf("more than %d payloads", maxPayloadFiles)
		}
		out = append(out, t)
		return nil
	}
	switch {
	case st.IsDir():
		ents, err := os.ReadDir(path)
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			if !e.Type().IsRegular() {
				continue
			}
			name := filepath.Join(path, e.Name())
			data, err := os.ReadFile(name)
			if err != nil {
				return nil, err
			}
			if err := add(name, data); err != nil {
				return nil, err
			}
		}
	case strings.HasSuffix(path, ".jsonl") || strings.HasSuffix(path, ".ndjson"):
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		for i, line := range bytes.Split(data, []byte("\n")) {
			line = bytes.TrimSuffix(line, []byte("\r"))
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			if err := add(fmt.Sprintf("%s line %d", path, i+1), line); err != nil {
				return nil, err
			}
		}
	default:
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		if err := add(path, data); err != nil {
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no payload", path)
	}
	return out, nil
}

// payloadsSize is the payload size of messages from payloads ts for client ids of at most
// idLen bytes under carrier m: the measurement bytes (header) and the longest rendering.
func payloadsSize(ts []*payloadtpl.Template, idLen int, m Measure) int {
	n := 0
	for _, t := range ts {
		n = max(n, t.MaxLen(idLen))
	}
	if m == MeasureMark || m == MeasureNone || m == MeasureProperty {
		return max(n, 1)
	}
	return PayloadTextAt + n
}

// checkPayloadFile checks a publishing group's payload file at path (the prefix of
// payload_file and payload_order): readable, payloads that compile, not beside a template
// or the literal, and, to measure by mark, a mark in every payload.
func checkPayloadFile(l *errList, path, file, order string, template, literal bool, m Measure) {
	switch order {
	case "", OrderRoundRobin, OrderRandom:
	default:
		l.Add(path+"payload_order", "%q is not an order (want %s or %s)", order, OrderRoundRobin, OrderRandom)
	}
	if file == "" {
		return
	}
	switch {
	case template:
		l.Add(path+"payload_file", "given with a payload_template: give one of the two")
		return
	case literal:
		l.Add(path+"payload_file", "given with parameters.payload (a literal): give one of the two")
		return
	}
	ts, err := loadPayloads(file)
	if err != nil {
		l.Add(path+"payload_file", "%v", err)
		return
	}
	if m == MeasureMark && slices.ContainsFunc(ts, func(t *payloadtpl.Template) bool { return !t.HasMark() }) {
		l.Add(path+"measure", "mark, but a payload of %s has no {{mark}} (its copies could not be measured; use none to replay the file as it is, unmeasured)", file)
	}
}
