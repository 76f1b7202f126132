package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/mqblast/mqblast/bench"
)

// load reads a result document from testdata (results of real runs on the embedded broker).
func load(t *testing.T, name string) *bench.Result {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var r bench.Result
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return &r
}
