package study

import (
	"github.com/mqblast/mqblast/internal/strictjson"
	"github.com/mqblast/mqblast/internal/textdist"
)

// Error is one problem with a campaign, on one line: the file, the JSON path of the field
// and what is wrong with its value, e.g.
//
//	edge.json: brokers[1].type: "mosqito" is not a broker type (want external, command, embedded, mosquitto, rabbitmq, aedes, gmqtt, sink)
//
// Load and Parse return every problem they find, joined with errors.Join; Errors gives
// them one by one.
//
// It is scenario's Error, so that scenario and campaign files report alike.
type Error = strictjson.Error

// Errors returns the campaign problems held in err, or nil when it holds none.
func Errors(err error) []*Error { return strictjson.Errors(err) }

type errList = strictjson.List

var (
	join  = strictjson.Join
	index = strictjson.Index
)

// suggest: see textdist.Suggest.
func suggest(name string, candidates []string) string {
	return textdist.Suggest(name, candidates)
}
