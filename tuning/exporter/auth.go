package exporter

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/mqblast/mqblast/internal/termtext"
)

// The environment variables LoadAuth reads when no file is given.
const (
	UsernameEnv = "MQBLAST_METRICS_USERNAME"
	PasswordEnv = "MQBLAST_METRICS_PASSWORD"
	TokenEnv    = "MQBLAST_METRICS_TOKEN"
)

// LoadAuth reads the exporters' credentials from file, or, when file is "", from the
// environment through env (os.Getenv): UsernameEnv and PasswordEnv for basic auth, or
// TokenEnv for a bearer token. No file and no variable is no credentials.
//
// The file holds either a bearer token alone (one line, as Prometheus's
// bearer_token_file), or lines of key=value with the keys username, password and
// bearer_token; blank lines and lines starting with # are skipped, and spaces around
// keys and values are trimmed. Basic auth and a token together are refused. Errors name
// the file, the line and the key, never a value.
func LoadAuth(file string, env func(string) string) (Auth, error) {
	if file == "" {
		if env == nil {
			env = os.Getenv
		}
		a := Auth{Username: env(UsernameEnv), Password: env(PasswordEnv), BearerToken: env(TokenEnv)}
		return a, checkAuth(a, "the environment ("+UsernameEnv+", "+PasswordEnv+", "+TokenEnv+")")
	}
	b, err := os.ReadFile(file)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return Auth{}, fmt.Errorf("exporter: cannot read the metrics credentials file %q: %w", termtext.Line(file), err)
	}
	a, err := parseAuth(string(b), file)
	if err != nil {
		return Auth{}, err
	}
	return a, checkAuth(a, fmt.Sprintf("credentials file %q", termtext.Line(file)))
}

func parseAuth(text, file string) (Auth, error) {
	var lines []int // indexes of the lines that count
	all := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	for i, l := range all {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, i)
		}
	}
	key := func(l string) (string, string, bool) {
		k, v, ok := strings.Cut(l, "=")
		k = strings.TrimSpace(k)
		switch k {
		case "username", "password", "bearer_token":
			return k, strings.TrimSpace(v), ok
		}
		return "", "", false
	}
	if len(lines) == 1 {
		if _, _, ok := key(strings.TrimSpace(all[lines[0]])); !ok {
			return Auth{BearerToken: strings.TrimSpace(all[lines[0]])}, nil
		}
	}
	var a Auth
	seen := map[string]bool{}
	for _, i := range lines {
		l := strings.TrimSpace(all[i])
		k, v, ok := key(l)
		if !ok {
			// The line is not quoted: it may be a secret (a token with an '=' in it).
			return Auth{}, fmt.Errorf("exporter: metrics credentials file %q: line %d: not username=, password= or bearer_token=: want those lines, or a token alone",
				termtext.Line(file), i+1)
		}
		if seen[k] {
			return Auth{}, fmt.Errorf("exporter: metrics credentials file %q: line %d: %s given twice", termtext.Line(file), i+1, k)
		}
		seen[k] = true
		switch k {
		case "username":
			a.Username = v
		case "password":
			a.Password = v
		case "bearer_token":
			a.BearerToken = v
		}
	}
	return a, nil
}

func checkAuth(a Auth, from string) error {
	switch {
	case a.BearerToken != "" && (a.Username != "" || a.Password != ""):
		return fmt.Errorf("exporter: %s: both a bearer token and basic auth: give one of them", from)
	case a.Password != "" && a.Username == "":
		return fmt.Errorf("exporter: %s: a password without a username: give the username too", from)
	}
	return nil
}
