package scenario

import (
	"strings"
	"testing"
)

// TestPasswordNotShown: a server.password of the wrong type, from the file or from Set, is
// reported with its path but without its value.
func TestPasswordNotShown(t *testing.T) {
	t.Parallel()
	const secret = "987654321"
	_, err := Parse("p.json", []byte(`{"type": "Connections", "publishers": {"client_count": 1},
		"server": {"hostname": "h", "password": `+secret+`}}`))
	if err == nil || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "server.password: a number is not a string") {
		t.Errorf("Parse: %v", err)
	}
	s, _ := Builtin("quick-conn-100")
	for _, v := range []string{"[" + secret, "{" + secret + "}", "[" + secret + "]"} {
		err := s.Set("server.password", v)
		if err == nil || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "server.password") {
			t.Errorf("Set %q: %v", v, err)
		}
	}
	if err := s.Set("server.password", secret); err != nil || s.Server.Password != secret {
		t.Errorf("Set a plain password: %v, %q", err, s.Server.Password)
	}
}
