package tuning

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteText writes r as an aligned table, one row per finding, followed by why and how to fix
// every finding that is not OK, and a last line that says whether the host is ready.
func (r Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tCURRENT\tNEEDED\tVERDICT")
	for _, f := range r.Findings {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", f.Name, f.Current, f.Needed, f.Verdict)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var b strings.Builder
	for _, f := range r.Findings {
		if f.Verdict == OK {
			continue
		}
		fmt.Fprintf(&b, "\n%s %s: %s\n", f.Verdict, f.Name, f.Why)
		for _, fix := range f.Fix {
			fmt.Fprintf(&b, "  fix: %s\n", fix)
		}
	}
	state := "ready"
	if !r.Ready() {
		state = "NOT READY"
	}
	fmt.Fprintf(&b, "\n%s: %d ok, %d warn, %d fail\n", state, r.Count(OK), r.Count(Warn), r.Count(Fail))
	_, err := io.WriteString(w, b.String())
	return err
}
