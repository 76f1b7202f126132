package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWrite: a write lands whole with its mode; a failed one leaves the old file and no
// temporary file, and its error names the path.
func TestWrite(t *testing.T) {
	p := filepath.Join(t.TempDir(), "a.json")
	if err := Write(p, 0o644, func(w io.Writer) error { _, err := io.WriteString(w, "one"); return err }); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "one" {
		t.Errorf("file holds %q", b)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v", st.Mode())
	}
	err := Write(p, 0, func(w io.Writer) error { _, _ = io.WriteString(w, "tw"); return errors.New("boom") })
	if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "boom") {
		t.Errorf("error %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "one" {
		t.Errorf("a failed write changed the file: %q", b)
	}
	if es, _ := os.ReadDir(filepath.Dir(p)); len(es) != 1 {
		t.Errorf("%d entries left in the directory", len(es))
	}
}
