package scenario

import (
	"strings"
	"testing"
)

// TestParseSize: the size syntax of scenario files and flags, with an error that names the
// input and the units.
func TestParseSize(t *testing.T) {
	for in, want := range map[string]int{"65536": 65536, "0": 0, "64KiB": 64 << 10, "64 KiB": 64 << 10, "1KB": 1000,
		"1MB": 1000 * 1000, "1MiB": 1 << 20, "1GB": 1000 * 1000 * 1000, "1GiB": 1 << 30, "512B": 512, " 2MiB ": 2 << 20} {
		if n, err := ParseSize(in); err != nil || n != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, n, err, want)
		}
	}
	for _, in := range []string{"", "one", "1TiB", "1.5KiB", "2GiB", "64kib", "KiB"} {
		n, err := ParseSize(in)
		if err == nil {
			t.Errorf("ParseSize(%q) took it (%d)", in, n)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, `"`+in+`"`) || !strings.Contains(msg, SizeUnits) {
			t.Errorf("ParseSize(%q): %q names neither the input nor the units", in, msg)
		}
	}
}
