package scenario

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// ResolveAll is Resolve that keeps going, as ParseAll does: for a file it returns the
// scenario decoded as far as the file allows together with every decode problem.
func ResolveAll(arg string) (*Scenario, error) {
	if st, err := os.Stat(arg); err == nil && !st.IsDir() {
		return LoadAll(arg)
	}
	if s, ok := Builtin(arg); ok {
		return s, nil
	}
	if strings.ContainsAny(arg, "/\\") || strings.HasSuffix(arg, ".json") {
		return LoadAll(arg)
	}
	return nil, fmt.Errorf("scenario %q: %w%s (mqblast scenarios lists the built-ins)",
		arg, ErrNotFound, suggest(arg, BuiltinNames()))
}

// ValidateAfter runs Validate on a scenario that ParseAll, LoadAll or ResolveAll returned
// with the problems prior (those, and any from Set or SetBrokers), and returns them all
// joined, prior ones first: every problem of the file at once. A rule problem at a path
// where a prior problem is (or below it) is left out: the value checked there is a default,
// not what the file says.
func (s *Scenario) ValidateAfter(prior error) error {
	bad := Errors(prior)
	verr := s.Validate()
	out := []error{prior}
	for _, e := range Errors(verr) {
		if !underAny(e.Path, bad) {
			out = append(out, e)
		}
	}
	return errors.Join(out...)
}

// underAny reports whether path is, or lies under, the path of one of errs.
func underAny(path string, errs []*Error) bool {
	for _, e := range errs {
		p := e.Path
		switch {
		case p == "":
		case path == p, strings.HasPrefix(path, p+"."), strings.HasPrefix(path, p+"["):
			return true
		}
	}
	return false
}
