package browsertest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHarnessSees checks that the harness catches what the page tests assert against: a
// console error, an uncaught exception and a request leaving the page (which fails: the
// page is offline), and that it evaluates expressions and writes a screenshot.
func TestHarnessSees(t *testing.T) {
	file := filepath.Join(t.TempDir(), "bad.html")
	page := `<!doctype html><html><body><p id="x">hello</p><script>
console.error("boom");
window.done = false;
fetch("http://192.0.2.1/leak").catch(() => { window.offline = true; }).finally(() => { window.done = true; });
setTimeout(() => { throw new Error("uncaught"); }, 0);
</script></body></html>`
	if err := os.WriteFile(file, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	p := Open(t, file, "window.done === true")
	p.Wait("true")
	if got := Eval[string](p, `document.getElementById("x").textContent`); got != "hello" {
		t.Errorf("Eval = %q, want hello", got)
	}
	if !Eval[bool](p, `window.offline === true`) {
		t.Error("the fetch did not fail: the page is not offline")
	}
	errs := strings.Join(p.Errors(), "\n")
	if !strings.Contains(errs, "boom") || !strings.Contains(errs, "uncaught") {
		t.Errorf("errors %q: want the console error and the uncaught exception", errs)
	}
	if reqs := p.Requests(); len(reqs) != 1 || reqs[0] != "http://192.0.2.1/leak" {
		t.Errorf("requests %q, want the one fetch", reqs)
	}
	t.Setenv("ARTIFACTS_DIR", t.TempDir())
	shot := p.Screenshot("bad.png")
	if b, err := os.ReadFile(shot); err != nil || len(b) < 8 || string(b[1:4]) != "PNG" {
		t.Errorf("screenshot %s: not a PNG (%v)", shot, err)
	}
}
