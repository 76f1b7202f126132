package scenario

import (
	"os"
	"strings"
	"testing"
)

// TestReferenceCoversEveryField: docs/scenario.md names every field the decoder accepts and
// every MQTT 5 property, so that the reference cannot fall behind the decoder.
func TestReferenceCoversEveryField(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../docs/scenario.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, set := range []struct {
		object string
		names  []string
	}{
		{"top level", fieldNames(scenarioFields)},
		{"publishers and subscribers", fieldNames(groupFields)},
		{"server", fieldNames(serverFields)},
		{"parameters", fieldNames(paramFields)},
		{"properties", append([]string{"name", "value", "key"}, propertyNames()...)},
		{"types", typeNames()},
		{"groups", fieldNames(clientGroupFields)},
		{"churn", fieldNames(churnFields)},
		{"behaviours", behaviourNames()},
	} {
		for _, n := range set.names {
			if !strings.Contains(doc, "`"+n+"`") {
				t.Errorf("docs/scenario.md does not document %s field `%s`", set.object, n)
			}
		}
	}
}
