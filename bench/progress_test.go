package bench

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

func TestRenderBar(t *testing.T) {
	check := func(p ConnectProgress, want ...string) {
		t.Helper()
		got := renderBar(p)
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("bar %q lacks %q", got, w)
			}
		}
	}
	check(ConnectProgress{TS: 2, Target: 1000, Connected: 400, Established: 390, Dropped: 10, PerS: 200},
		"connecting [============>                 ] 390/1000  40%", "200/s", "ETA 3s", "failed 0", "dropped 10")
	check(ConnectProgress{TS: 5, Target: 1000, Connected: 990, Established: 990, Failed: 10, PerS: 100, Done: true},
		"[==============================] 990/1000 100%", "done", "failed 10")
	check(ConnectProgress{TS: 1, Target: 10}, "[>", "  0%", "ETA -")
}

// TestTermProgressHandsOver: a bar being drawn ends its line before any other output, and
// its last drawing ends the line itself.
func TestTermProgressHandsOver(t *testing.T) {
	var b bytes.Buffer
	tp := &termProgress{w: &b}
	tp.Connecting(ConnectProgress{TS: 1, Target: 4, Connected: 1, Established: 1, PerS: 1})
	tp.Connecting(ConnectProgress{TS: 2, Target: 4, Connected: 2, Established: 2, PerS: 1})
	_, _ = io.WriteString(tp, "warning: something\n")
	tp.Connecting(ConnectProgress{TS: 3, Target: 4, Connected: 4, Established: 4, PerS: 2, Done: true})
	_, _ = io.WriteString(tp, "   4.0s  established 4/4\n")
	tp.end()
	lines := strings.Split(b.String(), "\n")
	if len(lines) != 5 || lines[4] != "" {
		t.Fatalf("%d lines, want 4 and a final newline: %q", len(lines)-1, b.String())
	}
	if !strings.HasPrefix(lines[0], "\r\x1b[K") || strings.Count(lines[0], "\r\x1b[K") != 2 || !strings.Contains(lines[0], "2/4") {
		t.Errorf("line 1 %q: want the bar drawn twice in place", lines[0])
	}
	if lines[1] != "warning: something" || !strings.Contains(lines[2], "4/4 100%") || lines[3] != "   4.0s  established 4/4" {
		t.Errorf("lines %q", lines[1:])
	}
}
