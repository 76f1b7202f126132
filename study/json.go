package study

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/mqblast/mqblast/internal/strictjson"
)

// object is a JSON object with its keys in file order: sweep keys name the cells, so their
// order must be the file's.
type object = strictjson.Object

// parseJSON decodes data into *object, []any, json.Number, string, bool and nil values.
func parseJSON(data []byte) (any, error) { return strictjson.Parse(data) }

// show renders a value for a message the way it would appear in the file.
func show(v any) string {
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
	case *object:
		return "an object"
	}
	return fmt.Sprint(v)
}

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
