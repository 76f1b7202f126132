package bench

import (
	"fmt"
	"testing"

	"github.com/mqblast/mqblast/scenario"
)

// TestIDStartTemplate: ids numbered from --id-start keep a client_id template's text and
// padding around the index: the engine dials, and the runner describes, "dev-0100-eu" for
// client 0 numbered from 100; the topics keep the index from 0.
func TestIDStartTemplate(t *testing.T) {
	t.Parallel()
	s, err := scenario.Parse("ids.json", []byte(`{"name": "ids", "type": "Round-Trip", "client_id": "dev-$clientindex:4-eu",
  "publishers": {"client_count": 3, "topics": "d/$clientid"}, "parameters": {"duration_sec": 1}}`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := scenario.NewPlan(s)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRunner(p, []string{"127.0.0.1:1"}, 100)
	if err != nil {
		t.Fatal(err)
	}
	for i := range p.Len() {
		want := fmt.Sprintf("dev-%04d-eu", 100+i)
		id, topic := r.Describe(i)
		if got := r.Engine.Client(i).ID; got != want || id != want || topic != fmt.Sprintf("d/dev-%04d-eu", i) {
			t.Errorf("client %d numbered from 100: dials %q, described %q on %q; want %q on d/dev-%04d-eu", i, got, id, topic, want, i)
		}
	}
}
