package study

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/mqblast/mqblast/internal/termtext"
)

// WriteList writes the table of the built-in campaigns (`mqblast study --list`).
func WriteList(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tBROKERS\tSCENARIOS\tPROFILES\tREPS\tCELLS\tDESCRIPTION")
	for _, name := range BuiltinNames() {
		c, err := Resolve(name)
		if err != nil {
			return fmt.Errorf("BUG: built-in campaign %s: %w", name, err)
		}
		desc := ""
		if len(c.Comments) > 0 {
			desc = c.Comments[0]
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%s\n", name, len(c.Brokers), len(c.Scenarios), len(c.Profiles),
			c.Repetitions, len(c.Cells()), desc)
	}
	return tw.Flush()
}

// WriteDryRun writes the cells of c in run order, each with the command that runs it and
// the Spec that command would run (`mqblast study --dry-run`), and runs nothing.
func WriteDryRun(w io.Writer, c *Campaign, opt Options) error {
	cells, err := DryRun(c, opt)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s: %d cells\n", termtext.Line(c.Name), len(cells))
	if c.NeedsEmulator() {
		fmt.Fprintln(w, "(network profiles: the brokers the study starts will listen in a network namespace behind the packet emulator, "+
			"and each run below will run under ip netns exec in the client namespace; the addresses below are the local ones)")
	}
	for _, r := range cells {
		fmt.Fprintf(w, "%4d %s %s\n     %s\n     %s: %s\n", r.Seq, r.ID, termtext.Line(r.Label()), termtext.Line(r.Reproduce),
			r.Spec, termtext.Line(string(r.specJSON)))
	}
	return nil
}

// Failed is the number of cells that failed.
func (ix *Index) Failed() int {
	failed := 0
	for _, r := range ix.Cells {
		if r.Status == StatusFailed {
			failed++
		}
	}
	return failed
}
