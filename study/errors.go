package study

import (
	"errors"
	"fmt"

	"github.com/mqblast/mqblast/internal/textdist"
	"github.com/mqblast/mqblast/scenario"
)

// Error is one problem with a campaign, on one line: the file, the JSON path of the field
// and what is wrong with its value, e.g.
//
//	edge.json: brokers[1].type: "mosqito" is not a broker type (want external, command, embedded, mosquitto or sink)
//
// Load and Parse return every problem they find, joined with errors.Join; Errors gives
// them one by one.
//
// It is scenario's Error, so that scenario and campaign files report alike.
type Error = scenario.Error

// Errors returns the campaign problems held in err, or nil when it holds none.
func Errors(err error) []*Error { return scenario.Errors(err) }

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

// suggest: see textdist.Suggest.
func suggest(name string, candidates []string) string {
	return textdist.Suggest(name, candidates)
}
