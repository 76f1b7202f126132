package tuning

import (
	"errors"
	"fmt"
	"io"

	"github.com/mqblast/mqblast/internal/fail"
)

// Described is a run described by its figures, not by a scenario (`mqblast check` and
// `tune apply`'s flags).
type Described struct {
	Connections, Addrs, Procs, BrokerPort, ConnectRate int
	LocalBroker                                        bool
}

// Needs are what d needs from the host; a figure out of range is of kind fail.ErrUsage and
// names its flag.
func (d Described) Needs() (Needs, error) {
	switch {
	case d.Connections < 1:
		return Needs{}, fail.Mark(fail.ErrUsage, fmt.Errorf("--connections %d: want at least 1", d.Connections))
	case d.Addrs < 1:
		return Needs{}, fail.Mark(fail.ErrUsage, fmt.Errorf("--addrs %d: want at least 1", d.Addrs))
	case d.Procs < 1:
		return Needs{}, fail.Mark(fail.ErrUsage, fmt.Errorf("--procs %d: want at least 1", d.Procs))
	case d.ConnectRate < 0:
		return Needs{}, fail.Mark(fail.ErrUsage, fmt.Errorf("--connect-rate %d: want 0 or more", d.ConnectRate))
	}
	n := ForConnections(d.Connections, d.Addrs, d.Procs)
	n.LocalBroker, n.BrokerPort, n.ConnectRate = d.LocalBroker, d.BrokerPort, d.ConnectRate
	return n, nil
}

// CheckHost is `mqblast check`: the host under root checked for needs, the report on w as
// format (text or json); a host that is not ready is an error of kind fail.ErrNotReady.
func CheckHost(w io.Writer, root string, needs Needs, format string) error {
	if format != "text" && format != "json" {
		return fail.Mark(fail.ErrUsage, fmt.Errorf("--format %q: want text or json", format))
	}
	r := Check(root, needs)
	if err := r.Write(w, format); err != nil {
		return err
	}
	if !r.Ready() {
		return fail.Mark(fail.ErrNotReady, fmt.Errorf("host not ready: %d checks failed", r.Count(Fail)))
	}
	return nil
}

// Tune is `mqblast tune apply`: the fixes of the host under root's findings for needs,
// applied (as root) or, with dryRun, only written; persist also writes the sysctls to
// SysctlFile. Every change, and what is left to fix, goes to w.
func Tune(w io.Writer, root string, needs Needs, dryRun, persist, isRoot bool) error {
	if !dryRun && !isRoot {
		return errors.New("tune apply changes system settings and needs root; try --dry-run to see the changes")
	}
	r := Check(root, needs)
	changes, err := PlanChanges(root, r, persist)
	if err != nil {
		return err
	}
	if dryRun {
		return WriteChanges(w, changes, r, "would ")
	}
	done, err := Apply(root, changes)
	if werr := WriteChanges(w, done, r, ""); werr != nil && err == nil {
		err = werr
	}
	return err
}
