//go:build !race

package termtext

import (
	"strings"
	"testing"
)

// TestLineAllocs: text with nothing to escape comes back as is, without a copy.
func TestLineAllocs(t *testing.T) {
	s := strings.Repeat("broker mosquitto 2.0.11 · 12 µs ", 4)
	lines := s + "\n\t" + s
	if n := testing.AllocsPerRun(100, func() { _ = Line(s); _ = Text(lines) }); n != 0 {
		t.Errorf("Line and Text of text with nothing to escape: %v allocations, want 0", n)
	}
}
