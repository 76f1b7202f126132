package study

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"
)

// chromiumDOM loads file in headless Chromium and returns the DOM after its load event
// (scripts run). Outside CI a missing Chromium skips the test; in CI it fails it.
// TODO(lead): dedupe with report's browser harness when html's lands.
func chromiumDOM(t *testing.T, file string) string {
	t.Helper()
	bin := "/usr/bin/chromium"
	if _, err := os.Stat(bin); err != nil {
		if p, err := exec.LookPath("chromium"); err == nil {
			bin = p
		} else if os.Getenv("CI") == "true" {
			t.Fatal("chromium is not installed; .ci/run installs it")
		} else {
			t.Skip("chromium is not installed")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+t.TempDir(), "--dump-dom", "file://"+file).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom %s: %v", file, err)
	}
	return string(out)
}
