package scenario

import (
	"strings"
	"testing"
)

// TestValidateAfter: decode problems and rule problems come together, and a rule is not
// checked against the default left where decoding failed.
func TestValidateAfter(t *testing.T) {
	t.Parallel()
	s, err := ParseAll("f.json", []byte(`{"type": "Fan-Out", "publishers": 5, "nosuch": 1,
		"subscribers": {"client_count": 10, "topics": "t", "retain": true}}`))
	if s == nil || err == nil {
		t.Fatalf("ParseAll: %v, %v", s, err)
	}
	var got []string
	for _, e := range Errors(s.ValidateAfter(err)) {
		got = append(got, e.Path+": "+e.Msg)
	}
	want := []string{
		"publishers: 5 is not a client group (want an object)",
		"nosuch: unknown field",
		"subscribers.retain: true, but subscribers publish nothing",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if s, err := Parse("f.json", []byte(`{"nosuch": 1}`)); s != nil || err == nil {
		t.Errorf("Parse of a bad file: %v, %v", s, err)
	}
}
