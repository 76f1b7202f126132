package scenario

import (
	"strconv"
	"time"

	"github.com/mqblast/mqblast/internal/strictjson"
	"github.com/mqblast/mqblast/internal/textdist"
)

// Error is one problem with a scenario, on one line: the file, the JSON path of the field and
// what is wrong with its value, e.g.
//
//	fanout.json: parameters.publish_rate: -5 is not a rate (must be > 0)
//
// Load, Parse, Set and Validate return every problem they find, joined with errors.Join; use
// Errors to get them one by one. Campaign files (study) report with the same type.
type Error = strictjson.Error

// Errors returns the scenario problems held in err (one for each line of err.Error()), or
// nil when err holds none.
func Errors(err error) []*Error { return strictjson.Errors(err) }

// errList collects problems for one scenario.
type errList = strictjson.List

// show renders a value for a message the way it would appear in the file: a decoded JSON
// value, or a field's Go value.
func show(v any) string {
	switch v := v.(type) {
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case int:
		return strconv.Itoa(v)
	case byte:
		return strconv.Itoa(int(v))
	case time.Duration:
		return strconv.FormatFloat(v.Seconds(), 'f', -1, 64)
	case Version:
		return v.String()
	}
	return strictjson.Show(v)
}

// suggest: see textdist.Suggest.
func suggest(name string, candidates []string) string {
	return textdist.Suggest(name, candidates)
}
