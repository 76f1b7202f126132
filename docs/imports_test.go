package docs

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// module is this module's path, the prefix of its packages' import paths.
const module = "github.com/mqblast/mqblast"

// TestImportTable: docs/design.md's import table lists every package of the module, once,
// with exactly the packages of the module it imports (tests aside), as `go list` says.
func TestImportTable(t *testing.T) {
	t.Parallel()
	text, err := os.ReadFile(filepath.Join("..", "docs", "design.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(text), "### Imports")
	if !ok {
		t.Fatal("design.md has no ### Imports section")
	}
	row := regexp.MustCompile("(?m)^\\| (`[^|]+`) \\|([^|]*)\\|$")
	documented := map[string][]string{}
	for _, m := range row.FindAllStringSubmatch(table, -1) {
		var imports []string
		for _, f := range strings.Split(m[2], ",") {
			if f = strings.TrimSpace(f); f != "" {
				imports = append(imports, f)
			}
		}
		for _, p := range strings.Split(m[1], ",") {
			p = strings.Trim(strings.TrimSpace(p), "`")
			if _, dup := documented[p]; dup {
				t.Errorf("%s: two rows", p)
			}
			documented[p] = imports
		}
	}
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", module+"/...")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg := strings.TrimPrefix(strings.TrimPrefix(f[0], module), "/")
		var ours []string
		for _, imp := range f[1:] {
			if p, ok := strings.CutPrefix(imp, module+"/"); ok {
				ours = append(ours, p)
			}
		}
		slices.Sort(ours)
		want, ok := documented[pkg]
		if !ok {
			t.Errorf("%s is not in design.md's import table (it imports: %s)", pkg, strings.Join(ours, ", "))
			continue
		}
		delete(documented, pkg)
		slices.Sort(want)
		if !slices.Equal(want, ours) {
			t.Errorf("%s: the table says it imports %q, go list %q", pkg, want, ours)
		}
	}
	for p := range documented {
		t.Errorf("%s is in the import table but not a package of the module", p)
	}
}
