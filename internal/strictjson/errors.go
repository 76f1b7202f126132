package strictjson

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mqblast/mqblast/internal/textdist"
)

// Error is one problem with a file, on one line: the file, the JSON path of the field and
// what is wrong with its value, e.g.
//
//	fanout.json: parameters.publish_rate: -5 is not a rate (must be > 0)
//
// A decoder returns every problem it finds, joined with errors.Join; Errors gives them one
// by one.
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

// Errors returns the problems held in err (one for each line of err.Error()), or nil when
// err holds none.
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

// List collects the problems with one file.
type List struct {
	File string
	Errs []error
}

// Add records a problem at path.
func (l *List) Add(path, format string, args ...any) {
	l.Errs = append(l.Errs, &Error{File: l.File, Path: path, Msg: fmt.Sprintf(format, args...)})
}

// Err joins the problems; nil when there are none.
func (l *List) Err() error { return errors.Join(l.Errs...) }

// MaxFileSize bounds a file; real ones are a few hundred bytes.
const MaxFileSize = 1 << 20

// ReadFile reads the file at path, what it holds (a "scenario", a "campaign") naming it in
// the errors, and refuses one larger than MaxFileSize.
func ReadFile(path, what string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", what, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("cannot read %s %q: %w", what, path, err)
	}
	if len(data) > MaxFileSize {
		return nil, &Error{File: path, Msg: fmt.Sprintf("file is larger than %d bytes", MaxFileSize)}
	}
	return data, nil
}

// ParseObject decodes data, which must be one JSON object; a syntax error or another value
// is added to l (what names the object wanted: "a scenario") and the result is nil then.
func ParseObject(data []byte, what string, l *List) *Object {
	root, err := Parse(data)
	if err != nil {
		l.Add("", "%v", err)
		return nil
	}
	obj, ok := root.(*Object)
	if !ok {
		l.Add("", "%s is not %s (want a JSON object)", Show(root), what)
		return nil
	}
	return obj
}

// Fields walks the keys of obj in file order: fn gets the value of each key that names one
// of fields (fn may be nil), and every other key is added to l as an unknown field at its
// path, with a suggestion.
func Fields(obj *Object, path string, fields []string, l *List, fn func(key string, v any, path string)) {
	for i, key := range obj.Keys {
		known := false
		for _, f := range fields {
			if f == key {
				known = true
				break
			}
		}
		switch {
		case !known:
			l.Add(Join(path, key), "unknown field%s", textdist.Suggest(key, fields))
		case fn != nil:
			fn(key, obj.Vals[i], Join(path, key))
		}
	}
}

// Join is the path of field name inside path.
func Join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// Index is the path of element i of the array at path.
func Index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// Show renders a decoded value for a message the way it would appear in the file.
func Show(v any) string {
	switch v := v.(type) {
	case string:
		return strconv.Quote(v)
	case json.Number:
		return v.String()
	case bool:
		return strconv.FormatBool(v)
	case nil:
		return "null"
	case []any:
		return "an array"
	case *Object:
		return "an object"
	}
	return fmt.Sprint(v)
}

// Number returns a JSON number as a finite float64.
func Number(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	x, err := n.Float64()
	if err != nil || math.IsInf(x, 0) || math.IsNaN(x) {
		return 0, false
	}
	return x, true
}

// Integer returns a JSON number as an int if it is integral (2.0 is) and fits.
func Integer(v any) (int, bool) {
	x, ok := Number(v)
	if !ok || x != math.Trunc(x) || math.Abs(x) > 1<<53 {
		return 0, false
	}
	return int(x), true
}

// Seconds reads a time span of at most max either way: a number of seconds or a Go
// duration string ("90s").
func Seconds(v any, max time.Duration) (time.Duration, bool) {
	if s, ok := v.(string); ok {
		d, err := time.ParseDuration(s)
		return d, err == nil && d.Abs() <= max
	}
	x, ok := Number(v)
	if !ok || math.Abs(x) > max.Seconds() {
		return 0, false
	}
	return time.Duration(math.Round(x * float64(time.Second))), true
}
