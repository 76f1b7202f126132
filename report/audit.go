package report

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/mqblast/mqblast/result"
)

// AuditEnv names the environment variable that, when it names a file, makes Audit record
// every document it checks there, one line each: "ok WHERE" or "broken WHERE: PROBLEMS".
// make test sets it for every pass and fails when a line says broken, so that any test
// whose run writes a result breaking an accounting identity fails the suite.
const AuditEnv = "MQBLAST_RESULT_AUDIT"

// Audit checks doc, a result document about to be written to where (a path, or "stdout"),
// by result.CheckDocument: counts not negative, percentiles in order and every accounting
// identity exact. A document that breaks one is mqblast's own defect, never the broker's:
// Audit says so on w in one warning and returns the problems; the document is written all
// the same (it holds what was measured).
func Audit(w io.Writer, doc []byte, where string) error {
	err := result.CheckDocument(doc)
	if err != nil {
		fmt.Fprintf(w, "mqblast: warning: the result written to %s breaks mqblast's own accounting (a defect of mqblast, not of the broker; please report it with the document):\n  %s\n",
			where, strings.ReplaceAll(err.Error(), "\n", "\n  "))
	}
	if log := os.Getenv(AuditEnv); log != "" {
		line := "ok " + auditWhere(where)
		if err != nil {
			line = "broken " + auditWhere(where) + ": " + strings.ReplaceAll(err.Error(), "\n", "; ")
		}
		if f, ferr := os.OpenFile(log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); ferr == nil {
			_, _ = f.WriteString(line + "\n") // one write: lines of processes in parallel stay whole
			_ = f.Close()
		}
	}
	return err
}

// auditWhere names a document in the audit log: the writing program and where it went
// (a test's output path names its test's temporary directory).
func auditWhere(where string) string {
	if where == "stdout" {
		if wd, err := os.Getwd(); err == nil {
			where = "stdout in " + wd
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return where
	}
	return filepath.Base(exe) + " " + where
}

// encodeResult returns res's document as WriteJSON writes it.
func encodeResult(res *result.Result) ([]byte, error) {
	var b bytes.Buffer
	err := res.WriteJSON(&b)
	return b.Bytes(), err
}
