package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mqblast/mqblast/result"
)

// TestAuditRecordsEveryDocument: WriteResult checks every document it writes; one whose
// scheduled is not published + unsent is written all the same, with one warning naming the
// identity, and the audit log ($MQBLAST_RESULT_AUDIT) gets a line per document, "ok" or
// "broken" with the problem.
func TestAuditRecordsEveryDocument(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "audit.log")
	t.Setenv(AuditEnv, log)
	good, bad := &result.Result{Schema: result.Schema}, &result.Result{Schema: result.Schema}
	good.Messages.Scheduled, good.Messages.Published = 10, 10
	bad.Messages.Scheduled, bad.Messages.Published = 10, 11
	var stdout, stderr bytes.Buffer
	if err := WriteResult(&stdout, &stderr, good, filepath.Join(dir, "good.json"), "json"); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stderr.String(), "warning") {
		t.Errorf("a document that holds its identities is warned about: %s", stderr.String())
	}
	stderr.Reset()
	out := filepath.Join(dir, "bad.json")
	if err := WriteResult(&stdout, &stderr, bad, out, "text"); err != nil {
		t.Fatal(err)
	}
	if w := stderr.String(); !strings.Contains(w, "warning: the result written to "+out+" breaks mqblast's own accounting") ||
		!strings.Contains(w, "messages.scheduled") || strings.Count(w, "warning") != 1 {
		t.Errorf("the broken document's warning: %q", w)
	}
	if _, err := os.Stat(out); err != nil {
		t.Errorf("the broken document was not written: %v", err)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "ok ") || !strings.HasSuffix(lines[0], "good.json") ||
		!strings.HasPrefix(lines[1], "broken ") || !strings.Contains(lines[1], "bad.json: messages.scheduled") {
		t.Errorf("audit log:\n%s", b)
	}
}
