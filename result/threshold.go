package result

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/mqblast/mqblast/internal/textdist"
)

// Threshold is one pass/fail criterion of a run (k6 style) as evaluated against its result:
// the expression as given, the value of the field it names, and whether it held.
type Threshold struct {
	Expr  string  `json:"expr"`
	Value float64 `json:"value"`
	OK    bool    `json:"ok"`
	// Unknown says the document does not know the value (it is null there, as expected
	// and lost of a run that does not know its publishers): the threshold does not hold.
	Unknown bool `json:"unknown,omitempty"`
}

// ValueText is the threshold's value as people read it, or "unknown".
func (t Threshold) ValueText() string {
	if t.Unknown {
		return "unknown"
	}
	return FormatThresholdValue(t.Value)
}

// ThresholdExpr is a parsed threshold expression: PATH OP NUMBER, e.g.
// "messages.lost==0" or "latency_us.p99 < 50000".
type ThresholdExpr struct {
	Expr  string   // the expression as given
	Path  []string // the JSON path of a result field, one key per element
	Op    string   // one of < <= > >= == !=
	Limit float64  // the right side
}

// thresholdOps lists the comparison operators, two-character ones first so that "<="
// is not read as "<".
var thresholdOps = []string{"<=", ">=", "==", "!=", "<", ">"}

// ParseThreshold parses a threshold expression: a result field by its JSON path (dotted,
// as in the result document: "connections.failed", "throughput.receive_per_s", a map key
// such as "connections.refused.not_authorized"), a comparison operator (< <= > >= == !=)
// and a number ("0", "5e4", "-1.5"). Spaces around the parts are allowed. It checks the
// syntax only; CheckThresholdPaths also checks that the path names a numeric field.
func ParseThreshold(expr string) (ThresholdExpr, error) {
	fail := func(format string, args ...any) (ThresholdExpr, error) {
		return ThresholdExpr{}, fmt.Errorf("threshold %q: %s (want PATH OP NUMBER, e.g. messages.lost==0 or latency_us.p99<50000)",
			expr, fmt.Sprintf(format, args...))
	}
	i := strings.IndexAny(expr, "<>=!")
	if i < 0 {
		return fail("no comparison operator (one of < <= > >= == !=)")
	}
	op := ""
	for _, o := range thresholdOps {
		if strings.HasPrefix(expr[i:], o) {
			op = o
			break
		}
	}
	if op == "" {
		if strings.HasPrefix(expr[i:], "=") {
			return fail("%q is not an operator: compare with ==", "=")
		}
		return fail("%q is not an operator (one of < <= > >= == !=)", expr[i:min(i+2, len(expr))])
	}
	left, right := strings.TrimSpace(expr[:i]), strings.TrimSpace(expr[i+len(op):])
	if left == "" {
		return fail("no field path before %s", op)
	}
	if right == "" {
		return fail("no number after %s", op)
	}
	limit, err := strconv.ParseFloat(right, 64)
	if err != nil || math.IsNaN(limit) || math.IsInf(limit, 0) {
		return fail("%q is not a number", right)
	}
	path := strings.Split(left, ".")
	for _, k := range path {
		if k == "" {
			return fail("%q has an empty path element", left)
		}
		if strings.ContainsAny(k, " \t") {
			return fail("%q holds a space", left)
		}
	}
	return ThresholdExpr{Expr: expr, Path: path, Op: op, Limit: limit}, nil
}

// Holds reports whether value satisfies the expression.
func (e ThresholdExpr) Holds(value float64) bool {
	switch e.Op {
	case "<":
		return value < e.Limit
	case "<=":
		return value <= e.Limit
	case ">":
		return value > e.Limit
	case ">=":
		return value >= e.Limit
	case "==":
		return value == e.Limit
	case "!=":
		return value != e.Limit
	}
	panic("BUG: result: threshold operator " + e.Op)
}

// CheckThresholdPaths parses every expression and checks that its path names a numeric (or
// boolean) field of the result document, so that a typo is reported before a run starts.
// The check follows the Result type, so fields added to it later are valid at once. A
// path into a map (e.g. "connections.refused.not_authorized") is valid for any key: maps
// are open, and a key that is absent when the run ends reads as 0. It returns every
// problem, joined, each naming its expression and the nearest valid keys.
func CheckThresholdPaths(exprs []string) error {
	_, err := parseThresholds(exprs)
	return err
}

func parseThresholds(exprs []string) ([]ThresholdExpr, error) {
	return parseThresholdsOf(exprs, reflect.TypeFor[Result](), "the result")
}

// parseThresholdsOf parses every expression and checks its path below the JSON form of
// type t, which messages call what.
func parseThresholdsOf(exprs []string, t reflect.Type, what string) ([]ThresholdExpr, error) {
	var errs []error
	out := make([]ThresholdExpr, 0, len(exprs))
	for _, s := range exprs {
		e, err := ParseThreshold(s)
		if err == nil {
			err = checkPath(t, what, e.Path)
			if err != nil {
				err = fmt.Errorf("threshold %q: %w", s, err)
			}
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, e)
	}
	return out, errors.Join(errs...)
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	rawMessage    = reflect.TypeFor[json.RawMessage]()
)

// checkPath checks that path, below a value of type t, leads to a number or a boolean in
// t's JSON form.
func checkPath(t reflect.Type, what string, path []string) error {
	at := what
	for i := 0; ; i++ {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if i > 0 {
			at = strings.Join(path[:i], ".")
		}
		rest := path[i:]
		kind := jsonKind(t)
		if t == reflect.TypeFor[[]Group]() { // groups.NAME: a group by its name
			if len(rest) == 0 {
				return fmt.Errorf("%s is a list of groups: name one (%s.NAME.field)", at, at)
			}
			t = t.Elem() // the loop's step passes over the name
			continue
		}
		switch kind {
		case kindNumber:
			if len(rest) > 0 {
				return fmt.Errorf("%s is a number and has no field %q", at, rest[0])
			}
			return nil
		case kindOpen:
			return nil // an interface{} field: anything may be below
		case kindObject:
			if t.Kind() == reflect.Map {
				if len(rest) == 0 {
					return fmt.Errorf("%s is a map, not a number: name one of its keys (%s.KEY)", at, at)
				}
				t = t.Elem()
				continue
			}
			fields := jsonFields(t)
			if len(rest) == 0 {
				return fmt.Errorf("%s is an object, not a number: name one of its fields (%s)", at, strings.Join(sortedNames(fields), ", "))
			}
			ft, ok := fields[rest[0]]
			if !ok {
				return fmt.Errorf("%s has no field %q (nearest: %s)", at, rest[0], strings.Join(nearest(rest[0], sortedNames(fields), 5), ", "))
			}
			t = ft
		default:
			return fmt.Errorf("%s is %s, not a number", at, kind)
		}
	}
}

// JSON kinds of a Go type, as checkPath sees them.
const (
	kindNumber = "a number"
	kindObject = "an object"
	kindOpen   = "any value"
	kindString = "a string"
	kindList   = "a list"
	kindOther  = "not a number"
)

// jsonKind says what encoding/json makes of a value of type t.
func jsonKind(t reflect.Type) string {
	if t == rawMessage {
		return "raw JSON"
	}
	if t.Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(jsonMarshaler) {
		return marshalerKind(t)
	}
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		return kindNumber
	case reflect.String:
		return kindString
	case reflect.Struct:
		return kindObject
	case reflect.Map:
		if t.Key().Kind() == reflect.String {
			return kindObject
		}
	case reflect.Slice, reflect.Array:
		return kindList
	case reflect.Interface:
		return kindOpen
	}
	return kindOther
}

// marshalerKind marshals the zero value of a type with its own MarshalJSON and reads the
// kind of JSON it writes: time.Time writes a string, Hist null or a string. A struct that
// writes an object (Messages) writes its own fields, so checkPath walks them.
func marshalerKind(t reflect.Type) (kind string) {
	defer func() {
		if recover() != nil {
			kind = kindOther
		}
	}()
	b, err := json.Marshal(reflect.New(t).Interface())
	if err != nil || len(b) == 0 {
		return kindOther
	}
	switch b[0] {
	case '"':
		return kindString
	case '[':
		return kindList
	case '{':
		if t.Kind() == reflect.Struct {
			return kindObject
		}
		return kindOpen
	case 't', 'f', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return kindNumber
	}
	return kindOther
}

// jsonFields returns the JSON field names of struct type t and their types, with the
// fields of embedded structs inlined as encoding/json does.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range jsonFields(ft) {
					if _, dup := out[k]; !dup {
						out[k] = v
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = ft
	}
	return out
}

func sortedNames(fields map[string]reflect.Type) []string {
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// nearest returns up to n of names, closest to s first (edit distance, then a shared
// prefix, then name order).
func nearest(s string, names []string, n int) []string {
	type cand struct {
		name string
		d    int
	}
	cs := make([]cand, len(names))
	for i, name := range names {
		d := textdist.Distance(s, name)
		if strings.HasPrefix(name, s) || strings.HasPrefix(s, name) {
			d = min(d, 1)
		}
		cs[i] = cand{name, d}
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].d < cs[j].d })
	out := make([]string, 0, n)
	for _, c := range cs[:min(n, len(cs))] {
		out = append(out, c.name)
	}
	return out
}

// EvaluateThresholds evaluates every expression against r and sets r.Thresholds, one
// entry per expression in order. It reads r as its JSON document, so any numeric field
// works, booleans read as 0 (false) and 1 (true), a field or map key absent from the
// document (omitted when empty) reads as 0, and one that is null there is unknown: the
// threshold does not hold. It returns an error, and leaves r.Thresholds
// unchanged, when an expression is malformed or names no numeric field (CheckThresholdPaths).
func (r *Result) EvaluateThresholds(exprs []string) error {
	parsed, err := parseThresholds(exprs)
	if err != nil {
		return err
	}
	if len(parsed) == 0 {
		r.Thresholds = nil
		return nil
	}
	saved := r.Thresholds
	r.Thresholds = nil // the document is read without the thresholds of an earlier call
	out, err := evaluate(r, parsed)
	r.Thresholds = saved
	if err != nil {
		return err
	}
	r.Thresholds = out
	return nil
}

// evaluate evaluates parsed expressions over v's JSON document.
func evaluate(v any, parsed []ThresholdExpr) ([]Threshold, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("cannot read the result to evaluate thresholds: %w", err)
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("cannot read the result to evaluate thresholds: %w", err)
	}
	out := make([]Threshold, 0, len(parsed))
	for _, e := range parsed {
		v, known, err := lookupNumber(doc, e.Path)
		if err != nil {
			return nil, fmt.Errorf("threshold %q: %w", e.Expr, err)
		}
		out = append(out, Threshold{Expr: e.Expr, Value: v, OK: known && e.Holds(v), Unknown: !known})
	}
	return out, nil
}

// lookupNumber reads the number at path in a decoded JSON document: 0 where the path is
// absent, not known where it is null.
func lookupNumber(doc any, path []string) (v float64, known bool, err error) {
	x := doc
	present := true
	for i, k := range path {
		if list, ok := x.([]any); ok && i > 0 && path[i-1] == "groups" { // a group by its name
			x, present = nil, false
			for _, e := range list {
				if g, ok := e.(map[string]any); ok && g["name"] == k {
					x, present = g, true
				}
			}
			if !present {
				return 0, false, fmt.Errorf("the run has no group %q", k)
			}
			continue
		}
		m, ok := x.(map[string]any)
		if !ok {
			if x == nil {
				return 0, true, nil
			}
			return 0, false, fmt.Errorf("%s is not an object", strings.Join(path[:i], "."))
		}
		x, present = m[k]
	}
	switch y := x.(type) {
	case nil:
		return 0, !present, nil
	case float64:
		return y, true, nil
	case bool:
		if y {
			return 1, true, nil
		}
		return 0, true, nil
	}
	return 0, false, fmt.Errorf("%s holds %T, not a number", strings.Join(path, "."), x)
}

// FailedThresholds returns the thresholds of r that did not hold.
func (r *Result) FailedThresholds() []Threshold {
	var out []Threshold
	for _, t := range r.Thresholds {
		if !t.OK {
			out = append(out, t)
		}
	}
	return out
}

// FormatThresholdValue writes a threshold's value as people read it: an integer without
// a fraction, any other number with at most three decimals.
func FormatThresholdValue(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64)
}
