package result

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadersImportNoRun: result, report and report/metrics import none of the run's
// packages (bench, reactor, scenario, tuning), directly or through another package of the
// module, so a program that reads result documents does not carry the run.
func TestReadersImportNoRun(t *testing.T) {
	const module = "github.com/mqblast/mqblast/"
	forbidden := map[string]bool{"bench": true, "reactor": true, "scenario": true, "tuning": true}
	root := ".."
	seen := map[string]bool{}
	var walk func(pkg string, via []string)
	walk = func(pkg string, via []string) {
		if seen[pkg] {
			return
		}
		seen[pkg] = true
		if first, _, _ := strings.Cut(pkg, "/"); forbidden[first] {
			t.Errorf("%s imports %s", strings.Join(via, " -> "), pkg)
			return
		}
		files, err := filepath.Glob(filepath.Join(root, pkg, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("package %s: no Go files (%v)", pkg, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			ast, err := parser.ParseFile(token.NewFileSet(), f, src, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range ast.Imports {
				if p := strings.Trim(imp.Path.Value, `"`); strings.HasPrefix(p, module) {
					walk(strings.TrimPrefix(p, module), append(via[:len(via):len(via)], pkg))
				}
			}
		}
	}
	for _, pkg := range []string{"result", "report", "report/metrics"} {
		walk(pkg, nil)
	}
}
