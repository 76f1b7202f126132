package strictjson

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseKeepsOrder(t *testing.T) {
	t.Parallel()
	v, err := Parse([]byte(`{"z": 1, "a": [true, null, "s"], "m": {"y": 2.5, "b": {}}}`))
	if err != nil {
		t.Fatal(err)
	}
	o := v.(*Object)
	if strings.Join(o.Keys, ",") != "z,a,m" {
		t.Errorf("keys %v, want file order z,a,m", o.Keys)
	}
	if n, _ := o.Get("z"); n != json.Number("1") {
		t.Errorf("z = %#v, want json.Number 1", n)
	}
	arr, _ := o.Get("a")
	if a := arr.([]any); len(a) != 3 || a[0] != true || a[1] != nil || a[2] != "s" {
		t.Errorf("a = %#v", a)
	}
	m, _ := o.Get("m")
	if mk := m.(*Object).Keys; strings.Join(mk, ",") != "y,b" {
		t.Errorf("m keys %v", mk)
	}
	if _, ok := o.Get("nope"); ok {
		t.Error("Get of a missing key reported it present")
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat("[", MaxDepth+2) + strings.Repeat("]", MaxDepth+2)
	for _, tc := range []struct{ in, want string }{
		{``, "empty file (want a JSON object)"},
		{"  \n ", "empty file (want a JSON object)"},
		{"{\n  \"a\": 1,\n  \"a\": 2\n}", `line 3, column 6: duplicate field "a"`},
		{"{\"a\": 1}\n{}", "line 2, column 2: unexpected data after the JSON value"},
		{"{\n\"a\": 1,\n", "line 3, column 1: unexpected end of file"},
		{"{\"a\" 1}", "line 1, column 6: invalid character '1' after object key"},
		{deep, "nested more than 32 deep"},
	} {
		_, err := Parse([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want an error with %q", tc.in, err, tc.want)
		}
	}
}

func TestWhere(t *testing.T) {
	t.Parallel()
	data := []byte("ab\ncd\n")
	for off, want := range map[int64]string{0: "line 1, column 1", 1: "line 1, column 2", 3: "line 2, column 1",
		5: "line 2, column 3", 99: "line 3, column 1", -4: "line 1, column 1"} {
		if got := Where(data, off); got != want {
			t.Errorf("Where(%d) = %q, want %q", off, got, want)
		}
	}
}

// TestFields: known keys reach the callback in file order with their paths, an unknown
// key is reported at its path with a suggestion.
func TestFields(t *testing.T) {
	v, err := Parse([]byte(`{"b": 1, "addrss": 2, "a": "x"}`))
	if err != nil {
		t.Fatal(err)
	}
	l := &List{File: "f.json"}
	var got []string
	Fields(v.(*Object), "top", []string{"a", "b", "address"}, l, func(key string, _ any, path string) {
		got = append(got, key+"@"+path)
	})
	if strings.Join(got, " ") != "b@top.b a@top.a" {
		t.Errorf("walked %v", got)
	}
	if err := l.Err(); err == nil || err.Error() != `f.json: top.addrss: unknown field (did you mean "address"?)` {
		t.Errorf("error %v", err)
	}
	if len(Errors(l.Err())) != 1 {
		t.Errorf("Errors: %v", Errors(l.Err()))
	}
}
