package testbroker

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/mqblast/mqblast/internal/tier"
)

// TestFreePortClaims: FreePort never hands out a port twice in a process, and skips a port
// another process holds the claim of (its file locked).
func TestFreePortClaims(t *testing.T) {
	tier.Integration(t) // it binds ports
	seen := map[int]bool{}
	for range 300 {
		p := FreePort(t, "127.0.0.1")
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
	}

	// Another process's claim: a lock on the port's file held elsewhere (another open file
	// description, as another process's would be).
	const p = 31999
	dir := filepath.Join(os.TempDir(), "mqblast-test-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, fmt.Sprint(p)), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close() //nolint:errcheck
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Skipf("port %d is claimed by another test process now: %v", p, err)
	}
	claimed.Delete(p)
	if claimPort(t, p) {
		t.Errorf("port %d claimed while another open file holds its lock", p)
	}
	claimed.Delete(p)
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	if !claimPort(t, p) {
		t.Errorf("port %d not claimed once its lock was released", p)
	}
}
