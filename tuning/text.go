package tuning

import (
	"encoding/json"
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

// Write writes r to w as a table (text) or one JSON document (json).
func (r Report) Write(w io.Writer, format string) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(r)
	}
	return r.WriteText(w)
}

// WriteChanges prints each change with its old value and revert command, then what is left.
func WriteChanges(w io.Writer, changes []Change, r Report, verb string) error {
	var b strings.Builder
	if len(changes) == 0 {
		b.WriteString("no sysctl or rlimit change needed\n")
	}
	for _, ch := range changes {
		if strings.HasPrefix(ch.Path, "/proc/sys/") {
			fmt.Fprintf(&b, "%sset %s: %s -> %s\n", verb, ch.Name, ch.Old, ch.New)
		} else {
			old := "new file"
			if ch.Old != "" {
				old = "replacing " + fmt.Sprintf("%q", ch.Old)
			}
			fmt.Fprintf(&b, "%swrite %s (%s): %q\n", verb, ch.Path, old, ch.New)
		}
		fmt.Fprintf(&b, "  revert: %s\n", ch.Revert)
		if ch.Note != "" {
			fmt.Fprintf(&b, "  note: %s\n", ch.Note)
		}
	}
	applied := map[string]bool{}
	for _, ch := range changes {
		applied[ch.Name] = true
	}
	for _, f := range r.Findings {
		if f.Verdict == OK || applied[f.Name] {
			continue
		}
		fmt.Fprintf(&b, "left to do by hand: %s %s: %s\n", f.Verdict, f.Name, f.Why)
		for _, fix := range f.Fix {
			fmt.Fprintf(&b, "  fix: %s\n", fix)
		}
	}
	b.WriteString("run 'mqblast check' with the same flags to see where the host stands\n")
	_, err := io.WriteString(w, b.String())
	return err
}
