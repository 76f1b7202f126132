package scenario

import (
	"embed"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/mqblast/mqblast/internal/strictjson"
)

// builtinFS holds the built-in scenarios, one JSON file each, named after the scenario.
//
//go:embed builtin/*.json
var builtinFS embed.FS

// Info describes a built-in scenario for a listing.
type Info struct {
	Name           string
	Type           Type
	Description    string  // the first comment
	Publishers     int     // clients of the publisher group
	Subscribers    int     // clients of the subscriber group
	Clients        int     // connections
	ConnectionRate float64 // connections per second
	PublishPerSec  float64 // messages per second published
	ReceivePerSec  float64 // messages per second delivered
	Duration       time.Duration
}

// BuiltinNames returns the names of the built-in scenarios, sorted.
func BuiltinNames() []string { return strictjson.Names(builtinFS, "builtin") }

// BuiltinJSON returns the file of the built-in scenario name, ready to copy and edit.
func BuiltinJSON(name string) ([]byte, bool) { return strictjson.File(builtinFS, "builtin", name) }

// Builtin returns a fresh copy of the built-in scenario name, which the caller may modify.
func Builtin(name string) (*Scenario, bool) {
	data, ok := BuiltinJSON(name)
	if !ok {
		return nil, false
	}
	s, err := Parse(name, data)
	if err != nil {
		panic(fmt.Sprintf("BUG: scenario: built-in %s: %v", name, err))
	}
	return s, true
}

// Builtins describes every built-in scenario, sorted by name.
func Builtins() []Info {
	names := BuiltinNames()
	out := make([]Info, 0, len(names))
	for _, name := range names {
		s, _ := Builtin(name)
		p, err := NewPlan(s)
		if err != nil {
			panic(fmt.Sprintf("BUG: scenario: built-in %s: %v", name, err))
		}
		e := p.Estimate()
		info := Info{
			Name:           name,
			Type:           s.Type,
			Clients:        e.Clients,
			ConnectionRate: s.Parameters.ConnectionRate,
			PublishPerSec:  e.PublishPerSec,
			ReceivePerSec:  e.ReceivePerSec,
			Duration:       s.Parameters.Duration,
		}
		switch {
		case s.Mixed():
			info.Publishers, info.Subscribers = e.Publishers, e.Subscribers
		default:
			if s.Publishers != nil {
				info.Publishers = s.Publishers.ClientCount
			}
			if s.Subscribers != nil {
				info.Subscribers = s.Subscribers.ClientCount
			}
		}
		if len(s.Comments) > 0 {
			info.Description = s.Comments[0]
		}
		out = append(out, info)
	}
	return out
}

// Resolve returns the scenario that a command-line argument names: an existing file, else a
// built-in scenario, else the file it looks like (so that the error says why it cannot be
// read).
func Resolve(arg string) (*Scenario, error) {
	data, err := ReadFile(arg)
	if err != nil {
		return nil, err
	}
	return Parse(arg, data)
}

// ReadFile returns the JSON of the scenario that a command-line argument names, as Resolve
// finds it: an existing file, else a built-in scenario, else the file it looks like.
func ReadFile(arg string) ([]byte, error) {
	if st, err := os.Stat(arg); err == nil && !st.IsDir() {
		return strictjson.ReadFile(arg, "scenario")
	}
	if data, ok := BuiltinJSON(arg); ok {
		return data, nil
	}
	if strings.ContainsAny(arg, "/\\") || strings.HasSuffix(arg, ".json") {
		return strictjson.ReadFile(arg, "scenario")
	}
	return nil, fmt.Errorf("scenario %q: %w%s (mqblast scenarios lists the built-ins)",
		arg, ErrNotFound, suggest(arg, BuiltinNames()))
}

// ErrNotFound is returned by Resolve for an argument that is neither a file nor a built-in
// scenario.
var ErrNotFound = errors.New("no such file or built-in scenario")
