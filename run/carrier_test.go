package run

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/run/spec"
)

// TestSummaryCarrier: the text summary of a real run says where each publishing group's
// messages carried their measurement: production-shaped-1K, shortened, against Mosquitto
// (devices by a text mark inside their JSON, gateways by the header before their fill, one
// more group's template replayed unmeasured) has one "carrier" line naming the three; a
// run whose messages all start with the header has none.
func TestSummaryCarrier(t *testing.T) {
	t.Parallel()
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	short := sets("parameters.duration_sec", 2, "parameters.warmup_sec", "500ms", "parameters.drain_sec", 2,
		"groups.devices.client_count", 200, "groups.gateways.payload_size", "1KB")
	data, err := os.ReadFile("../scenario/builtin/production-shaped-1K.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	doc["groups"] = append(doc["groups"].([]any), map[string]any{"name": "raw", "behaviours": []string{"publish"},
		"client_id": "raw-$clientindex", "client_count": 2, "qos": 1, "topics": "site/raw/$clientindex", "publish_rate": 1,
		"measure": "none", "payload_template": `{"raw":{{seq}}}`})
	if data, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	sp := &Spec{Scenario: spec.Scenario{Name: "production-shaped-1K.json", File: json.RawMessage(data), Set: short},
		Brokers: []string{m.Addr}, NoCheck: true, Outputs: spec.Outputs{Format: "text"}}
	r := doSpec(t, sp)
	if r.err != nil || r.res == nil {
		t.Fatalf("%v\n%s", r.err, r.stderr)
	}
	line := regexp.MustCompile(`(?m)^carrier +(.*)$`).FindStringSubmatch(r.stdout)
	want := "devices: mark (template), gateways: header (fill), raw: none (template, its copies unmeasured)"
	if line == nil || line[1] != want {
		t.Errorf("the summary's carrier line: %q, want %q; summary:\n%s", line, want, r.stdout)
	} else {
		t.Logf("%s (measurement %+v; published %d, received %d, unmeasured %d, lost %d)", line[0], r.res.Measurement,
			r.res.Messages.Published, r.res.Messages.Received, r.res.Messages.Unmeasured, r.res.Messages.Lost)
	}
	if m := r.res.Messages; m.Lost != 0 || m.Unmeasured == 0 || m.Received == 0 {
		t.Errorf("received %d, unmeasured %d, lost %d: want the raw group's copies unmeasured, none lost", m.Received, m.Unmeasured, m.Lost)
	}

	plain := quick("quick-p2p-100", m.Addr, sets("parameters.duration_sec", 1, "parameters.warmup_sec", 0, "parameters.drain_sec", 1)...)
	plain.NoCheck, plain.Outputs.Format = true, "text"
	r = doOK(t, plain)
	if strings.Contains(r.stdout, "\ncarrier ") || !strings.Contains(r.stdout, "\ndelivery ") {
		t.Errorf("a run with the header alone: want a summary without a carrier line:\n%s", r.stdout)
	}
}
