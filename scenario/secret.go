package scenario

import "encoding/json"

// secretNotJSON is the message for a --set of a secret field whose value starts like JSON
// but is not: the value itself is never shown.
const secretNotJSON = "the value (not shown: it is a secret) starts with '[', '{' or '\"' but is not valid JSON; " +
	"give it as a JSON string (server.password='\"...\"') or use --password-file"

// kindOf names the JSON kind of a decoded value without showing it, for fields whose value
// must not appear in a message.
func kindOf(v any) string {
	switch v.(type) {
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	case []any:
		return "an array"
	case *object:
		return "an object"
	case string:
		return "a string"
	}
	return "a value"
}
