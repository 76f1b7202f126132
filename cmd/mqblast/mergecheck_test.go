package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mqblast/mqblast/internal/testbroker"
)

// TestMergeRefusesNonShards: the result files of two real shard runs of one run identity
// record their shard and merge; the same file twice, one shard alone (the other missing), a
// shard of another scenario, a shard of another run (another --run-id) and a result whose
// histograms were lost are refused (exit 2) with the reason.
func TestMergeRefusesNonShards(t *testing.T) {
	t.Parallel()
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	dir := t.TempDir()
	run := func(name, shard, runID string, sets ...string) string {
		t.Helper()
		f := filepath.Join(dir, name)
		args := []string{"run", "quick-conn-100", "--broker", m.Addr, "--shard", shard, "--run-id", runID, "--duration", "300ms",
			"--set", "parameters.connection_rate=2000", "--out", f, "--format", "json"}
		for _, s := range sets {
			args = append(args, "--set", s)
		}
		r := runBin(t, args...)
		if r.code != 0 {
			t.Fatalf("%s: exit %d\n%s", name, r.code, r.stderr)
		}
		if res := decodeResult(t, r); res.Shard == nil || res.Shard.String() != shard {
			t.Fatalf("%s: result records shard %v, want %s", name, res.Shard, shard)
		}
		return f
	}
	s0, s1 := run("s0.json", "0/2", "merge-check"), run("s1.json", "1/2", "merge-check")
	other := run("other.json", "1/2", "merge-check", "parameters.keep_alive_sec=30")
	otherRun := run("other-run.json", "1/2", "another-run")

	// A copy of s1 whose histograms are gone (a document edited or written by another tool).
	b, err := os.ReadFile(s1)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	doc["histograms"] = map[string]any{"connect_latency": nil}
	noHist := filepath.Join(dir, "nohist.json")
	b, _ = json.Marshal(doc)
	if err := os.WriteFile(noHist, b, 0o644); err != nil {
		t.Fatal(err)
	}

	if r := runBin(t, "merge", s0, s1, "--format", "json"); r.code != 0 || decodeResult(t, r).Shard != nil {
		t.Fatalf("merge of both shards: exit %d\n%s", r.code, r.stderr)
	}
	for _, tc := range []struct {
		name  string
		files []string
		want  string
	}{
		{"same-file", []string{s0, s0, s1}, s0 + " and " + s0 + ": the same file twice"},
		{"same-shard", []string{s1, other, s0}, "both are shard 1/2"},
		{"missing-shard", []string{s0}, "shard 1/2 missing"},
		{"other-scenario", []string{s0, other}, "different scenarios: parameters.keep_alive_sec is 60 in one and 30 in the other"},
		{"no-histogram", []string{s0, noHist}, noHist + ": connections.connect_latency_us counts"},
		{"other-run", []string{s0, otherRun}, "different runs: run merge-check (tag "},
		{"other-run-fix", []string{otherRun, s0}, "run every shard with the same --run-id (or the same --start-at)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runBin(t, append([]string{"merge"}, tc.files...)...)
			if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("exit %d, want %d and %q in stderr:\n%s", r.code, exitUsage, tc.want, r.stderr)
			}
			if r.stdout != "" {
				t.Errorf("a refused merge printed a result:\n%.300s", r.stdout)
			}
		})
	}
}
