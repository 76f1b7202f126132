package bench

import (
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"sync"
	"time"
)

// ProgressWriter returns w for the run's progress: on a terminal (and TERM not dumb), one
// that draws the connect phase as a bar; otherwise w itself, where the connect phase is
// printed as interval lines like the rest of the run.
func ProgressWriter(w io.Writer) io.Writer {
	if f, ok := w.(*os.File); ok && os.Getenv("TERM") != "dumb" && isTerminal(f) {
		return &termProgress{w: w}
	}
	return w
}

// EndProgress ends a connect bar's line if one is drawn (before the process writes
// anything to stderr past the progress writer, or exits).
func EndProgress(w io.Writer) {
	if t, ok := w.(*termProgress); ok {
		t.end()
	}
}

// termProgress is stderr on a terminal: it draws the connect phase as one bar, redrawn in
// place at each interval (ConnectBar), and ends the bar's line before anything else
// is written, so that the interval lines and warnings stay intact. A hand-written bar
// rather than a library's: it is redrawn from the interval the run already prints (no
// second ticker, no goroutine), and the line hand-over with the other stderr output is the
// part a library does not do for us. Safe for concurrent use (worker processes' stderr is
// copied through it).
type termProgress struct {
	mu      sync.Mutex
	w       io.Writer
	pending bool // a bar is drawn and its line not ended
}

var _ ConnectBar = (*termProgress)(nil)

func (t *termProgress) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pending {
		t.pending = false
		if _, err := io.WriteString(t.w, "\n"); err != nil {
			return 0, err
		}
	}
	return t.w.Write(p)
}

// Connecting implements ConnectBar.
func (t *termProgress) Connecting(p ConnectProgress) {
	t.mu.Lock()
	defer t.mu.Unlock()
	line := "\r\x1b[K" + renderBar(p)
	if p.Done {
		line += "\n"
	}
	_, _ = io.WriteString(t.w, line)
	t.pending = !p.Done
}

func (t *termProgress) end() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pending {
		t.pending = false
		_, _ = io.WriteString(t.w, "\n")
	}
}

// barWidth is the bar's width in characters.
const barWidth = 30

// renderBar draws the connect phase: bar, established / target, share, rate, ETA (from the
// interval's rate), failures and drops; when Done, how long it took.
func renderBar(p ConnectProgress) string {
	done := float64(p.Connected+p.Failed) / float64(max(p.Target, 1))
	done = math.Min(done, 1)
	fill := int(done * barWidth)
	bar := strings.Repeat("=", fill)
	if fill < barWidth {
		bar += ">" + strings.Repeat(" ", barWidth-fill-1)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%6.1fs  connecting [%s] %d/%d %3.0f%%  %.0f/s", p.TS, bar, p.Established, p.Target, 100*done, p.PerS)
	switch {
	case p.Done:
		fmt.Fprintf(&b, "  done")
	case p.PerS > 0:
		left := float64(p.Target - p.Connected - p.Failed)
		fmt.Fprintf(&b, "  ETA %v", (time.Duration(left / p.PerS * float64(time.Second))).Round(time.Second))
	default:
		b.WriteString("  ETA -")
	}
	fmt.Fprintf(&b, "  failed %d  dropped %d", p.Failed, p.Dropped)
	return b.String()
}
