package study

import (
	"encoding/json"
	"strconv"

	"github.com/mqblast/mqblast/internal/strictjson"
)

// object is a JSON object with its keys in file order: sweep keys name the cells, so their
// order must be the file's.
type object = strictjson.Object

// show renders a value for a message the way it would appear in the file.
func show(v any) string { return strictjson.Show(v) }

// setText turns a sweep or set value into the text --set takes.
func setText(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case json.Number:
		return v.String(), true
	case bool:
		return strconv.FormatBool(v), true
	}
	return "", false
}
