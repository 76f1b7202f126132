package result

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The documents in testdata/v1 were written by earlier versions of mqblast: conn, p2p,
// result and roundtrip are recorded runs; shard0 and shard1 are two shards with every
// field set, written at commit 97f72b7 (the bench package of then) by
// testdata/v1/gen_old_test.go.txt. testdata/v1/want holds what that commit made of them:
// each read and written again (rewritten-*), and merged (merged-*). To make them again,
// check the commit out, copy the generator into its bench/ as gen_old_test.go and run
//
//	GENDIR=DIR REPORTDATA=report/testdata go test -run TestGenOld ./bench/

func readDoc(t *testing.T, path string) *Result {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &r
}

func docJSON(t *testing.T, r *Result) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := r.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// sameJSON fails unless got is want to the byte, naming the first field that differs.
func sameJSON(t *testing.T, name string, got, want []byte) {
	t.Helper()
	if bytes.Equal(got, want) {
		return
	}
	var g, w any
	_ = json.Unmarshal(got, &g)
	_ = json.Unmarshal(want, &w)
	t.Errorf("%s: not the JSON the old code wrote (-old +new):\n%s", name, cmp.Diff(w, g))
}

// TestOldDocumentsRewrite: a document of an earlier writer reads, and is written again as
// the old code wrote it again, to the byte; one the old code wrote is written unchanged.
func TestOldDocumentsRewrite(t *testing.T) {
	for _, n := range []string{"conn", "p2p", "result", "roundtrip", "shard0", "shard1"} {
		r := readDoc(t, filepath.Join("testdata/v1", n+".json"))
		want, err := os.ReadFile(filepath.Join("testdata/v1/want", "rewritten-"+n+".json"))
		if err != nil {
			t.Fatal(err)
		}
		sameJSON(t, n, docJSON(t, r), want)
	}
	for _, n := range []string{"shard0", "shard1"} {
		orig, err := os.ReadFile(filepath.Join("testdata/v1", n+".json"))
		if err != nil {
			t.Fatal(err)
		}
		sameJSON(t, n+" as written", docJSON(t, readDoc(t, filepath.Join("testdata/v1", n+".json"))), orig)
	}
}

// TestOldDocumentsMerge: merging documents of an earlier writer gives what the old Merge
// gave, to the byte: shards with every field set (with their intervals, without them as
// Gather merges, one alone) and recorded runs. The verdicts are the exception: the old
// Merge added the shards', the merge judges them anew from the merged evidence (Judge),
// and they agree with one another.
func TestOldDocumentsMerge(t *testing.T) {

	doc := func(n string) *Result { return readDoc(t, filepath.Join("testdata/v1", n+".json")) }
	noIntervals := func(r *Result) *Result { r.Intervals = nil; return r }
	for name, rs := range map[string][]*Result{
		"merged-shards":             {doc("shard0"), doc("shard1")},
		"merged-shards-nointervals": {noIntervals(doc("shard0")), noIntervals(doc("shard1"))},
		"merged-shard1-alone":       {doc("shard1")},
		"merged-p2p-roundtrip":      {doc("p2p"), doc("roundtrip")},
		"merged-conn-result":        {doc("conn"), doc("result")},
	} {
		want, err := os.ReadFile(filepath.Join("testdata/v1/want", name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		before := make([][]byte, len(rs))
		for i, r := range rs {
			before[i] = docJSON(t, r)
		}
		got := Merge(rs)
		sameJSON(t, name, withoutVerdicts(t, docJSON(t, got)), withoutVerdicts(t, want))
		if v := got.Verdicts(); v.Saturated && (v.Stalled || v.Busy) || v.HostLimited != (len(v.HostEvidence) > 0) {
			t.Errorf("%s: merged verdicts contradict one another: %+v", name, v)
		}
		for i, r := range rs {
			if !bytes.Equal(docJSON(t, r), before[i]) {
				t.Errorf("%s: Merge changed input %d", name, i)
			}
		}
	}
}

// TestTotalMatchesDocument: the snapshot a result carries and the one its document shows
// when read back merge alike, so a run's own results and documents read from files give
// the same merged document.
func TestTotalMatchesDocument(t *testing.T) {
	var live, read []*Result
	for i := range 2 {
		s := fullSnapshot(int64(10 * (i + 1)))
		r := &Result{Schema: Schema, Connections: Connections{Target: 100}, Host: HostInfo{Procs: 1}}
		r.SetTotal(s)
		live = append(live, r)
		back := &Result{}
		if err := json.Unmarshal(docJSON(t, r), back); err != nil {
			t.Fatal(err)
		}
		read = append(read, back)
		// Every figure of the snapshot but the six the document does not keep comes back
		// (Delivered is a group's figure, the run's is 0).
		want := *s
		want.PublishedMeasured, want.ReceivedMeasured, want.CPUNS, want.RSSBytes, want.Offered, want.Delivered = 0, 0, 0, 0, 0, 0
		if d := cmp.Diff(&want, back.snapshot(), cmp.Comparer(func(a, b *Hist) bool { return a.Summary() == b.Summary() })); d != "" {
			t.Errorf("snapshot read back (-set +read):\n%s", d)
		}
	}
	sameJSON(t, "merge of documents read back", docJSON(t, Merge(read)), docJSON(t, Merge(live)))
}

// fullSnapshot returns a snapshot with every counter, every map and every histogram set
// (by reflection, so that a field added later is set too), the counters from base up.
func fullSnapshot(base int64) *Snapshot {
	s := NewSnapshot()
	v := reflect.ValueOf(s).Elem()
	n := base
	for i := range v.NumField() {
		f := v.Field(i)
		name := v.Type().Field(i).Name
		switch x := f.Addr().Interface().(type) {
		case *int64:
			n++
			*x = n
		case *map[string]int64:
			(*x)["a_"+name] = n
			(*x)["b"] = n + 1
		case **Hist:
			for k := range 100 {
				(*x).Record(n + int64(k)*7)
			}
		case *map[string]string, *[]*Snapshot:
		default:
			panic("fullSnapshot: a field of a new kind: " + name)
		}
	}
	s.FirstPublish = 1_700_000_000_000_000_000 + base
	s.TLSCPUUS = s.TLSHandshakes * 37
	for prefix, m := range map[string]map[string]int64{"refused:": s.Refused, "failed:": s.Failed, "dropped:": s.Dropped,
		"reconnect_failed:": s.ReconnectFailed} {
		for k := range m {
			s.Examples[prefix+k] = "example of " + prefix + k
		}
	}
	return s
}

// TestSnapshotFieldLists: Add, Reset and NewSnapshot go through counts, maps and hists;
// every field of a Snapshot is in one of them (FirstPublish and Examples apart), so a
// field added to the struct alone is caught here.
func TestSnapshotFieldLists(t *testing.T) {
	var s Snapshot
	listed := map[any]bool{}
	for _, p := range s.counts() {
		listed[p] = true
	}
	for _, p := range s.maps() {
		listed[p] = true
	}
	for _, p := range s.hists() {
		listed[p] = true
	}
	v := reflect.ValueOf(&s).Elem()
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		if name == "FirstPublish" || name == "Examples" || name == "Groups" {
			continue
		}
		if !listed[v.Field(i).Addr().Interface()] {
			t.Errorf("Snapshot.%s is in none of counts, maps, hists", name)
		}
	}
	// Add then Reset: everything adds, and Reset empties everything.
	a := fullSnapshot(1)
	sum := NewSnapshot()
	sum.Add(a)
	sum.Add(a)
	if sum.Connected != 2*a.Connected || sum.RSSBytes != 2*a.RSSBytes || sum.Unsent["b"] != 2*a.Unsent["b"] ||
		sum.ScheduleLag.Count() != 2*a.ScheduleLag.Count() || sum.FirstPublish != a.FirstPublish || len(sum.Examples) != 8 {
		t.Errorf("Add: %+v", sum)
	}
	sum.Reset()
	if d := cmp.Diff(docJSONSnap(t, NewSnapshot()), docJSONSnap(t, sum)); d != "" {
		t.Errorf("Reset left (-empty +got):\n%s", d)
	}
}

func docJSONSnap(t *testing.T, s *Snapshot) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// withoutVerdicts is the document doc without the fields Judge sets.
func withoutVerdicts(t *testing.T, doc []byte) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(doc, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "limited_by")
	delete(m, "limited_by_reason")
	for k, fields := range map[string][]string{"client": {"saturated", "saturation_evidence"},
		"broker_stalled": {"stalled"}, "host": {"limited", "limited_evidence"}} {
		if o, ok := m[k].(map[string]any); ok {
			for _, f := range fields {
				delete(o, f)
			}
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
