package secret

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
)

// PasswordEnv names the environment variable that carries the broker password: to a run
// from the user (when the run gives a username), and to every mqblast child that needs it
// (workers, a study's cells, a run in the emulator's namespace).
const PasswordEnv = "MQBLAST_PASSWORD"

// GroupPasswordsEnv names the environment variable that carries the passwords of client
// groups' own servers (a scenario's groups[].server.password), a JSON object of group
// name to password: to a run from the user, and to every mqblast child that needs them.
const GroupPasswordsEnv = "MQBLAST_GROUP_PASSWORDS"

// Marker stands for a password in what mqblast writes. As a password given to a run
// (--set server.password=<redacted>), it means: the one in PasswordEnv.
const Marker = "<redacted>"

// Env is env with PasswordEnv set to password, or without it when password is "".
func Env(env []string, password string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, PasswordEnv+"=") {
			out = append(out, kv)
		}
	}
	if password != "" {
		out = append(out, PasswordEnv+"="+password)
	}
	return out
}

// EnvGroups is env with GroupPasswordsEnv set to the passwords of groups (group name to
// password), or without it when there are none.
func EnvGroups(env []string, groups map[string]string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, GroupPasswordsEnv+"=") {
			out = append(out, kv)
		}
	}
	if len(groups) > 0 {
		b, _ := json.Marshal(groups) // a map of strings always marshals
		out = append(out, GroupPasswordsEnv+"="+string(b))
	}
	return out
}

// ErrGroupPasswords is the error of a GroupPasswordsEnv value that is not a JSON object of
// strings; it shows nothing of the value.
var ErrGroupPasswords = errors.New("$" + GroupPasswordsEnv + " is not a JSON object of group names and passwords " +
	`(want e.g. {"devices": "..."}; the value is not shown: it holds secrets)`)

// GroupPasswords reads a GroupPasswordsEnv value: group name to password (nil for "").
func GroupPasswords(v string) (map[string]string, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	var out map[string]string
	if json.Unmarshal([]byte(v), &out) != nil || out == nil {
		return nil, ErrGroupPasswords
	}
	return out, nil
}

// RedactJSON returns doc with the value of every member named key, in objects at any
// depth, replaced by Marker, unless it is "", null or Marker already. It returns doc itself
// when there is nothing to replace, or when doc is not JSON it can read.
func RedactJSON(doc []byte, key string) []byte {
	var spans [][2]int
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	if !walk(dec, doc, key, &spans) {
		return doc
	}
	if len(spans) == 0 {
		return doc
	}
	out := make([]byte, 0, len(doc))
	at := 0
	for _, sp := range spans {
		out = append(append(out, doc[at:sp[0]]...), `"`+Marker+`"`...)
		at = sp[1]
	}
	return append(out, doc[at:]...)
}

// walk reads one value from dec and adds to spans the byte ranges of doc that hold the
// values of members named key; false when doc is not JSON.
func walk(dec *json.Decoder, doc []byte, key string, spans *[][2]int) bool {
	tok, err := dec.Token()
	if err != nil {
		return false
	}
	switch tok {
	case json.Delim('{'):
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return false
			}
			if k == key {
				start := int(dec.InputOffset())
				for start < len(doc) && strings.IndexByte(" \t\r\n:", doc[start]) >= 0 {
					start++
				}
				var v any
				if err := dec.Decode(&v); err != nil {
					return false
				}
				if s, ok := v.(string); v != nil && (!ok || (s != "" && s != Marker)) {
					*spans = append(*spans, [2]int{start, int(dec.InputOffset())})
				}
				continue
			}
			if !walk(dec, doc, key, spans) {
				return false
			}
		}
		_, err = dec.Token() // '}'
		return err == nil
	case json.Delim('['):
		for dec.More() {
			if !walk(dec, doc, key, spans) {
				return false
			}
		}
		_, err = dec.Token() // ']'
		return err == nil
	}
	return true
}

// RedactURL returns a broker address with the password of its user information, if it
// has one (mqtt://user:password@host), replaced by Marker.
func RedactURL(s string) string {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return s
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	at := strings.LastIndexByte(rest[:end], '@')
	if at < 0 {
		return s
	}
	user, _, hasPass := strings.Cut(rest[:at], ":")
	if !hasPass {
		return s
	}
	return scheme + "://" + user + ":" + Marker + rest[at:]
}
