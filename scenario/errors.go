package scenario

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mqblast/mqblast/internal/textdist"
)

// Error is one problem with a scenario, on one line: the file, the JSON path of the field and
// what is wrong with its value, e.g.
//
//	fanout.json: parameters.publish_rate: -5 is not a rate (must be > 0)
//
// Load, Parse, Set and Validate return every problem they find, joined with errors.Join; use
// Errors to get them one by one.
type Error struct {
	File string // file name or built-in name; "" when unknown
	Path string // JSON path such as "publishers.topics[1]"; "" for the file as a whole
	Msg  string // the offending value and what is wanted
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

// Errors returns the scenario problems held in err (one for each line of err.Error()), or
// nil when err holds none.
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

// errList collects problems for one scenario.
type errList struct {
	file string
	errs []error
}

func (l *errList) add(path, format string, args ...any) {
	l.errs = append(l.errs, &Error{File: l.file, Path: path, Msg: fmt.Sprintf(format, args...)})
}

func (l *errList) err() error { return errors.Join(l.errs...) }

// show renders a value for a message the way it would appear in the file.
func show(v any) string {
	switch v := v.(type) {
	case string:
		return strconv.Quote(v)
	case json.Number:
		return v.String()
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case int:
		return strconv.Itoa(v)
	case byte:
		return strconv.Itoa(int(v))
	case time.Duration:
		return strconv.FormatFloat(v.Seconds(), 'f', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	case nil:
		return "null"
	case []any:
		return "an array"
	case *object:
		return "an object"
	case Version:
		return v.String()
	}
	return fmt.Sprint(v)
}

// suggest: see textdist.Suggest.
func suggest(name string, candidates []string) string {
	return textdist.Suggest(name, candidates)
}
