package study

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mqblast/mqblast/internal/textdist"
)

// Error is one problem with a campaign, on one line: the file, the JSON path of the field
// and what is wrong with its value, e.g.
//
//	edge.json: brokers[1].type: "mosqito" is not a broker type (want external, command, embedded, mosquitto or sink)
//
// Load and Parse return every problem they find, joined with errors.Join; Errors gives
// them one by one.
type Error struct {
	File string // the campaign file or built-in name
	Path string // JSON path such as "scenarios[0].sweep.parameters.payload_size[2]"; "" for the whole file
	Msg  string
}

// Error returns "file: path: msg", leaving out the empty parts.
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(": ")
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors returns the campaign problems held in err, or nil when it holds none.
func Errors(err error) []*Error {
	var out []*Error
	var walk func(error)
	walk = func(err error) {
		if err == nil {
			return
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		var e *Error
		if errors.As(err, &e) {
			out = append(out, e)
		}
	}
	walk(err)
	return out
}

type errList struct {
	file string
	errs []error
}

func (l *errList) add(path, format string, args ...any) {
	l.errs = append(l.errs, &Error{File: l.file, Path: path, Msg: fmt.Sprintf(format, args...)})
}

func (l *errList) err() error { return errors.Join(l.errs...) }

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// suggest returns ` (did you mean "x"?)` for the candidate closest to name, or "".
func suggest(name string, candidates []string) string {
	lname := strings.ToLower(name)
	best, bestD := "", 3
	for _, c := range candidates {
		if d := textdist.Distance(lname, strings.ToLower(c)); d < bestD && (d < 2 || len(name) >= 6) {
			best, bestD = c, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}
