package report

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/mqblast/mqblast/internal/termtext"
	"github.com/mqblast/mqblast/result"
)

// poison is what a crafted document carries in each of its strings: an OSC that retitles
// the terminal, a colour, a line of its own, a carriage return, a right-to-left override and
// an 8-bit CSI.
const poison = "\x1b]0;pwned\x07\x1b[31m\nFORGED line\r\u202e\u009b2J"

// poisoned returns r with every string it holds set to poison: fields, slice elements and
// map keys, after adding one element to each empty slice, map and nil pointer whose type
// holds only plain data (strings, numbers, and structs, slices and maps of them), so that
// every printer of r has a string of each kind to print. The scenario is one whose name
// and parameters carry poison.
func poisoned(t *testing.T, r *result.Result) *result.Result {
	t.Helper()
	var fill func(v reflect.Value)
	fill = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.String:
			v.SetString(poison)
		case reflect.Bool:
			v.SetBool(true) // stalled, saturated, limited: their evidence is printed then
		case reflect.Pointer:
			if v.IsNil() && plain(v.Type().Elem()) {
				v.Set(reflect.New(v.Type().Elem()))
			}
			if !v.IsNil() {
				fill(v.Elem())
			}
		case reflect.Struct:
			for i := range v.NumField() {
				if f := v.Field(i); v.Type().Field(i).IsExported() && f.CanSet() {
					fill(f)
				}
			}
		case reflect.Slice:
			if v.Type().Elem().Kind() == reflect.Uint8 {
				return // json.RawMessage
			}
			if v.Len() == 0 && plain(v.Type().Elem()) {
				v.Set(reflect.Append(v, reflect.New(v.Type().Elem()).Elem()))
			}
			for i := range v.Len() {
				fill(v.Index(i))
			}
		case reflect.Map:
			if v.Type().Key().Kind() != reflect.String || !plain(v.Type().Elem()) {
				return
			}
			if v.IsNil() {
				v.Set(reflect.MakeMap(v.Type()))
			}
			e := reflect.New(v.Type().Elem()).Elem()
			fill(e)
			if e.CanInt() {
				e.SetInt(1) // a count of 0 is left out of the summary
			}
			v.SetMapIndex(reflect.ValueOf(poison).Convert(v.Type().Key()), e)
		}
	}
	fill(reflect.ValueOf(r).Elem())
	sc, err := json.Marshal(map[string]any{"name": poison, "type": "p2p", "parameters": map[string]any{poison: poison, "qos": 1}})
	if err != nil {
		t.Fatal(err)
	}
	r.Scenario = sc
	return r
}

// plain reports whether t holds only plain data: no unexported field, no time.Time, no
// histogram.
func plain(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return true
	case reflect.Pointer, reflect.Slice:
		return plain(t.Elem())
	case reflect.Map:
		return t.Key().Kind() == reflect.String && plain(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if !t.Field(i).IsExported() || !plain(t.Field(i).Type) {
				return false
			}
		}
		return true
	}
	return false
}

// checkClean fails t when out has a character that termtext escapes (but the newlines
// that end its own lines) or a line that the document started.
func checkClean(t *testing.T, what string, out []byte) {
	t.Helper()
	if !bytes.Contains(out, []byte(`FORGED`)) {
		t.Errorf("%s: prints none of the crafted strings; the test checks nothing:\n%s", what, out)
	}
	for i, line := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		if esc := termtext.Line(line); esc != line {
			t.Errorf("%s: line %d holds raw control characters: %q\n(escaped: %s)", what, i+1, line, esc)
		}
		if strings.HasPrefix(line, "FORGED") {
			t.Errorf("%s: line %d was started by the document: %q", what, i+1, line)
		}
	}
}

// TestPrintersEscapeDocuments: a result document whose every string carries terminal
// escapes, a newline and a bidi override (broker, tool version, evidence, kernel findings,
// thresholds, error kinds and examples, scenario name and parameters, kernel counter
// names) gives a text summary, a compare table, an interval log and a CSV with none of them
// raw and no line of the document's making.
func TestPrintersEscapeDocuments(t *testing.T) {
	t.Parallel()
	r := poisoned(t, loadFixture(t))
	other := poisoned(t, load(t, "p2p.json"))
	other.Scenario = json.RawMessage(`{"name":"other","type":"p2p","parameters":{"qos":0}}`) // a scenario warning quotes both

	var b bytes.Buffer
	if err := WriteSummary(&b, r); err != nil {
		t.Fatal(err)
	}
	checkClean(t, "summary", b.Bytes())
	for _, want := range []string{"broker ", "error ", "KERNEL ", "threshold ", "BROKER STALLED ", "SATURATED ", "broker $SYS "} {
		if !strings.Contains(b.String(), "\n"+want) {
			t.Errorf("summary: no %q line to check:\n%s", want, b.String())
		}
	}

	b.Reset()
	if err := WriteCompare(&b, []Input{{Name: "a.json", Result: r}, {Name: "b.json", Result: other}}); err != nil {
		t.Fatal(err)
	}
	checkClean(t, "compare", b.Bytes())
	if !strings.HasPrefix(b.String(), "WARNING: ") {
		t.Errorf("compare: no scenario warning to check:\n%s", b.String())
	}

	b.Reset()
	if err := WriteHlog(&b, r); err != nil {
		t.Fatal(err)
	}
	checkClean(t, "interval log", b.Bytes())
	if head, _, _ := strings.Cut(b.String(), "\n"); !strings.HasPrefix(head, "#[mqblast \\x1b]0;pwned\\x07") {
		t.Errorf("interval log: the first line is %q, want the escaped tool version in it", head)
	}

	b.Reset()
	if err := WriteCSV(&b, r); err != nil {
		t.Fatal(err)
	}
	checkClean(t, "CSV", b.Bytes())
}
