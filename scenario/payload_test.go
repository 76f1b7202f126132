package scenario

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestPayloadTemplateSize: a template gives the payload size (the measurement bytes and its
// longest rendering for the group's client ids), in place of a given payload_size; groups
// take the parameters' unless they give their own; the plan's clients carry it compiled,
// and the file written back reads the same.
func TestPayloadTemplateSize(t *testing.T) {
	t.Parallel()
	s, err := Parse("tpl.json", []byte(`{"name": "tpl", "parameters": {"publish_rate": 2, "payload_size": 100,
	  "payload_template": "{\"s\":{{seq}},\"d\":\"{{client_id}}\"}"},
	  "groups": [
	    {"name": "dev", "behaviours": "publish", "topics": "d/$clientindex", "client_count": 3},
	    {"name": "own", "behaviours": "publish", "topics": "o/$clientindex", "payload_template": "{{rand_text 40}}"},
	    {"name": "sub", "behaviours": "subscribe", "filters": ["d/+", "o/+"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	// {"s": (5) + 10 digits + ,"d":" (6) + client id + "} (2): 23 + len("mqblast-dev-") + 10.
	if want := PayloadTextAt + 23 + len("mqblast-dev-") + 10; s.Groups[0].PayloadSize != want {
		t.Errorf("dev payload_size %d, want %d", s.Groups[0].PayloadSize, want)
	}
	if want := PayloadTextAt + 40; s.Groups[1].PayloadSize != want {
		t.Errorf("own payload_size %d, want %d", s.Groups[1].PayloadSize, want)
	}
	p, err := NewPlan(s)
	if err != nil {
		t.Fatal(err)
	}
	if c := p.Client(0); c.PayloadTemplate == nil || !c.PayloadTemplate.PerClient() {
		t.Errorf("client 0: template %v", c.PayloadTemplate)
	}
	if c := p.Client(3); c.PayloadTemplate == nil || c.PayloadTemplate.String() != "{{rand_text 40}}" {
		t.Errorf("client 3: template %v", c.PayloadTemplate)
	}
	if c := p.Client(4); c.PayloadTemplate != nil {
		t.Errorf("a subscriber has a payload template")
	}
	out, err := s.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse("back.json", out)
	if err != nil {
		t.Fatal(err)
	}
	if err := back.Validate(); err != nil || back.Groups[1].PayloadTemplate != "{{rand_text 40}}" || back.Groups[0].PayloadSize != s.Groups[0].PayloadSize {
		t.Errorf("written back: %v\n%s", err, out)
	}
}

// TestPayloadTemplateInvalid: a template that does not compile, one beside the payload
// literal, and one on a group that publishes nothing are each named by their field.
func TestPayloadTemplateInvalid(t *testing.T) {
	t.Parallel()
	check := func(file, want string) {
		t.Helper()
		s, err := Parse("bad.json", []byte(file))
		if err == nil {
			err = s.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", file, err, want)
		}
	}
	check(`{"type": "Point-To-Point", "publishers": {"topics": "t"}, "subscribers": {"topics": "t"},
	  "parameters": {"payload_template": "{{temp}}"}}`, `bad.json: parameters.payload_template: {{temp}} at byte 0: unknown placeholder`)
	check(`{"type": "Point-To-Point", "publishers": {"topics": "t"}, "subscribers": {"topics": "t"},
	  "parameters": {"payload_template": "{{seq}}", "payload": "x"}}`, `parameters.payload_template: given with parameters.payload`)
	check(`{"groups": [{"name": "p", "behaviours": "publish", "topics": "t", "payload_template": "{{choice}}"},
	  {"name": "s", "behaviours": "subscribe", "filters": "t", "payload_template": "{{seq}}"}]}`, `groups[0].payload_template: {{choice}} at byte 0: choice takes a list`)
	check(`{"groups": [{"name": "p", "behaviours": "publish", "topics": "t"},
	  {"name": "s", "behaviours": "subscribe", "filters": "t", "payload_template": "{{seq}}"}]}`, `groups[1].payload_template: given, but the group publishes nothing`)
}

// TestMeasureInvalid: each carrier's conditions, named by the field.
func TestMeasureInvalid(t *testing.T) {
	t.Parallel()
	check := func(file, want string) {
		t.Helper()
		s, err := Parse("m.json", []byte(file))
		if err == nil {
			err = s.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", file, err, want)
		}
	}
	plain := func(version int, params string) string {
		return `{"type": "Point-To-Point", "publishers": {"topics": "t", "protocol_version": ` + strconv.Itoa(version) +
			`}, "subscribers": {"topics": "t", "protocol_version": ` + strconv.Itoa(version) + `}, "parameters": {` + params + `}}`
	}
	check(plain(3, `"measure": "mark"`), `m.json: parameters.measure: mark, but the payload template has no {{mark}}`)
	check(plain(3, `"measure": "mark", "payload_template": "{{seq}}"`), `parameters.measure: mark, but the payload template has no {{mark}}`)
	check(plain(3, `"measure": "none"`), `parameters.measure: none needs a payload_template`)
	check(plain(3, `"measure": "property", "payload_template": "{{seq}}"`), `parameters.measure: property needs protocol_version 5`)
	check(plain(5, `"measure": "bogus", "payload_template": "{{seq}}"`), `parameters.measure: "bogus" is not a measurement carrier`)
	for _, ok := range []string{
		`{"groups": [{"name": "p", "behaviours": "publish", "topics": "t", "protocol_version": 5, "payload_template": "{{seq}}",
	  "publish_properties": [{"name": "correlation_data", "value": "x"}]},
	  {"name": "s", "behaviours": "subscribe", "filters": "t", "protocol_version": 5}], "parameters": {"measure": "property"}}`, plain(3, `"measure": "mark", "payload_template": "{\"m\":\"{{mark}}\"}"`),
		plain(5, `"measure": "property", "payload_template": "{\"s\":{{seq}}}"`), plain(3, `"measure": "none", "payload_template": "x"`)} {
		s, err := Parse("ok.json", []byte(ok))
		if err == nil {
			err = s.Validate()
		}
		if err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

// TestSizeDist: payload_size as a weighted list or a range: its largest size is the
// payload size, its mean the estimates', and it is written back as given.
func TestSizeDist(t *testing.T) {
	t.Parallel()
	check := func(text string, lo, hi int, mean float64) {
		t.Helper()
		d, err := ParseSizeDist(text)
		if err != nil || d.Min() != lo || d.Max() != hi || d.Mean() != mean {
			t.Errorf("%s: %+v %v: min %d max %d mean %v, want %d %d %v", text, d, err, d.Min(), d.Max(), d.Mean(), lo, hi, mean)
		}
	}
	check("1KB:80,10KB:15,1MB:5", 1000, 1000000, 0.8*1000+0.15*10000+0.05*1000000)
	check("100B-2KB", 100, 2000, 1050)
	check("64: 1, 16KiB:0, 128:3", 64, 128, 112)
	for _, bad := range []string{"1KB:0,2KB:0", "1KB:x", "2KB-1KB", "1KB:-1", "1KB"} {
		if _, err := ParseSizeDist(bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	s, err := Parse("d.json", []byte(`{"type": "Point-To-Point", "publishers": {"topics": "t/$clientindex", "client_count": 10},
	  "subscribers": {"topics": "t/$clientindex", "client_count": 10}, "parameters": {"payload_size": "100B:50,10KB:50", "publish_rate": 100}}`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(s)
	if err != nil {
		t.Fatal(err)
	}
	if p.MaxPayloadSize() != 10000 || p.Client(10).PayloadSizes == nil || p.Client(10).PayloadSizes.Mean() != 5050 {
		t.Errorf("max %d, client's sizes %+v", p.MaxPayloadSize(), p.Client(10).PayloadSizes)
	}
	// 1,000 msg/s of a mean 5,050-byte payload (and topic, header), not of 10,000.
	if e := p.Estimate(); e.BytesOutPerSec < 5_050_000 || e.BytesOutPerSec > 5_200_000 {
		t.Errorf("bytes out %v per s, want the mean payload's", e.BytesOutPerSec)
	}
	out, err := s.MarshalJSON()
	if err != nil || !strings.Contains(string(out), `"payload_size":"100B:50,10KB:50"`) {
		t.Errorf("written back: %v\n%s", err, out)
	}
	for file, want := range map[string]string{
		`{"type": "Point-To-Point", "publishers": {"topics": "t"}, "subscribers": {"topics": "t"}, "parameters": {"payload_size": "10B-2KB"}}`:                                    "parameters.payload_size: \"10B-2KB\" draws 10 bytes",
		`{"type": "Point-To-Point", "publishers": {"topics": "t"}, "subscribers": {"topics": "t"}, "parameters": {"payload_size": "1KB:1,2KB:1", "payload_template": "{{seq}}"}}`: "parameters.payload_size: \"1KB:1,2KB:1\", but the payload template or file gives the size",
	} {
		s, err := Parse("d.json", []byte(file))
		if err == nil {
			err = s.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", file, err, want)
		}
	}
}

// TestPayloadFileInvalid: a payload file that cannot be read, one with a line that does not
// compile, one without a mark in every payload measured by mark, and one beside a
// template, each named by its field.
func TestPayloadFileInvalid(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	noMark := filepath.Join(dir, "nomark.jsonl")
	if err := os.WriteFile(bad, []byte("{\"a\":1}\n{\"b\":\"{{nope}}\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(noMark, []byte("{\"m\":\"{{mark}}\"}\n{\"b\":2}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	plain := func(params string) string {
		return `{"type": "Point-To-Point", "publishers": {"topics": "t"}, "subscribers": {"topics": "t"}, "parameters": {` + params + `}}`
	}
	q := strconv.Quote
	for file, want := range map[string]string{
		plain(`"payload_file": ` + q(filepath.Join(dir, "none.jsonl"))):     "parameters.payload_file: stat " + filepath.Join(dir, "none.jsonl"),
		plain(`"payload_file": ` + q(bad)):                                  "parameters.payload_file: " + bad + " line 2: {{nope}} at byte 6: unknown placeholder",
		plain(`"payload_file": ` + q(noMark) + `, "measure": "mark"`):       "parameters.measure: mark, but a payload of " + noMark + " has no {{mark}}",
		plain(`"payload_file": ` + q(noMark) + `, "payload_template": "x"`): "parameters.payload_file: given with a payload_template",
		plain(`"payload_file": ` + q(noMark) + `, "payload_order": "lifo"`): `parameters.payload_order: "lifo" is not an order`,
	} {
		s, err := Parse("f.json", []byte(file))
		if err == nil {
			err = s.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", file, err, want)
		}
	}
	s, err := Parse("f.json", []byte(plain(`"payload_file": `+q(noMark)+`, "measure": "none"`)))
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(s)
	if err != nil {
		t.Fatal(err)
	}
	if c := p.Client(1); len(c.PayloadTemplates) != 2 || c.PayloadRandom || p.MaxPayloadSize() != len(`{"m":"`)+52+len(`"}`) {
		t.Errorf("client 1: %d payloads, random %v; max payload %d", len(c.PayloadTemplates), c.PayloadRandom, p.MaxPayloadSize())
	}
}

// TestPropertyReceivers: a mixed scenario's group measured by property whose messages a
// 3.1.1 group receives is refused, naming the field.
func TestPropertyReceivers(t *testing.T) {
	t.Parallel()
	file := func(subVersion int) string {
		return `{"groups": [{"name": "p", "behaviours": "publish", "topics": "t/$clientindex", "protocol_version": 5,
		  "payload_template": "{{seq}}", "measure": "property"},
		  {"name": "s", "behaviours": "subscribe", "filters": "t/+", "protocol_version": ` + strconv.Itoa(subVersion) + `}]}`
	}
	s, err := Parse("p.json", []byte(file(3)))
	if err == nil {
		err = s.Validate()
	}
	if want := `groups[0].measure: property, but an MQTT 3.x group receives "t/0"`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("%v, want %q", err, want)
	}
	if s, err = Parse("p.json", []byte(file(5))); err == nil {
		err = s.Validate()
	}
	if err != nil {
		t.Errorf("5.0 receivers: %v", err)
	}
}
