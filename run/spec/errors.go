package spec

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Error is a problem with one field of a Spec. Its message names fields by their JSON
// paths; a command line that made the Spec from its flags names them by its flags
// instead (Text).
type Error struct {
	// Field is the JSON path of the field at fault: "procs", "limit.step",
	// "scenario.set[2]".
	Field string
	// format and args make the message; "{path}" in format stands for the name of the
	// field at path (Text).
	format string
	args   []any
}

// Errorf returns the problem with field; "{path}" in format stands for the name of the
// field at path: its JSON path, or the flag that gave it (Text). The args are never read
// for field names.
func Errorf(field, format string, args ...any) *Error {
	return &Error{Field: field, format: format, args: args}
}

// Textf is Errorf for a message already made (by a package that takes the name of the
// field to put in it, given as "{path}"): "{path}" in text stands for the name of the field
// at path.
func Textf(field, text string) *Error { return &Error{Field: field, format: escapePercent(text)} }

// Error is the message with the fields named by their JSON paths.
func (e *Error) Error() string { return e.Text(nil) }

// fieldRef is a field's name in a message's format: "{limit.step}".
var fieldRef = regexp.MustCompile(`\{([a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*)\}`)

// Text is the message with every field named by name(path) (its JSON path when name is
// nil or returns "").
func (e *Error) Text(name func(path string) string) string {
	format := fieldRef.ReplaceAllStringFunc(e.format, func(ref string) string {
		path := ref[1 : len(ref)-1]
		if name != nil {
			if n := name(path); n != "" {
				return escapePercent(n)
			}
		}
		return escapePercent(path)
	})
	return fmt.Sprintf(format, e.args...)
}

func escapePercent(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' {
			out = append(out, '%')
		}
		out = append(out, s[i])
	}
	return string(out)
}

// Text is err's message with every field of a Spec in it named by name(path): the
// messages of the *Error values err holds (joined ones each on its line), and err's own
// message where it says more than the field's error it wraps.
func Text(err error, name func(path string) string) string {
	var lines []string
	var walk func(e error)
	walk = func(e error) {
		var fe *Error
		if errors.As(e, &fe) && fe.Error() == e.Error() { // the field's error, or a kind around it
			lines = append(lines, fe.Text(name))
			return
		}
		if j, ok := e.(interface{ Unwrap() []error }); ok { //nolint:errorlint // the joined errors themselves, each on its line
			for _, y := range j.Unwrap() {
				walk(y)
			}
			return
		}
		if u := errors.Unwrap(e); u != nil && u.Error() == e.Error() { // a kind around joined errors
			walk(u)
			return
		}
		lines = append(lines, e.Error())
	}
	walk(err)
	return strings.Join(lines, "\n")
}
