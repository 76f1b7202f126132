package run

import (
	"context"
	"errors"

	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/scenario"
)

// Launch says how a run starts and ends as the command gives it: how many processes, whether
// the host is checked first, the outputs served during it, and what its end writes.
type Launch struct {
	// Procs is auto or a number of worker processes (ChooseProcs).
	Procs string
	// Check runs the host checks first and refuses a run bound to fail (Preflight).
	Check bool
	// Outputs are served during the run and stopped after its end is written.
	Outputs *Outputs
	// Brokers says that brokers were given, which a run against the sink refuses.
	Brokers bool
	// Report is what the end of the run writes (Report.Finish).
	Report Report
	// Limit, if set, makes the run a search for the broker's limit (Limit): plan was
	// prepared for it (PrepareLimit).
	Limit *LimitOptions
}

// Run chooses the processes, checks the host, serves the outputs, executes plan with o and
// finishes the run's report; it returns the run's outcome (Report.Finish).
func (l Launch) Run(ctx context.Context, plan *scenario.Plan, o Options) error {
	var err error
	if o.Procs, err = ChooseProcs(l.Procs, plan); err != nil {
		return err
	}
	if l.Check {
		if o.Checks, err = Preflight(o.Log, plan, o.Procs); err != nil {
			return err
		}
	}
	if err := l.Outputs.Serve(o.Log, plan.Len()); err != nil {
		return err
	}
	var groups []string
	for _, g := range plan.Groups() {
		groups = append(groups, g.Name)
	}
	l.Outputs.SetGroups(groups)
	defer l.Outputs.Stop(ctx, o.Log)
	if o.Sink && l.Brokers {
		return usage(errors.New("--sink and --broker: pick one (--sink starts its own server on loopback)"))
	}
	o.OnInterval = l.Outputs.OnInterval(o.Log)
	var res *result.Result
	if l.Limit != nil {
		res, err = Limit(ctx, plan, o, *l.Limit)
	} else {
		res, err = Execute(ctx, plan, o)
	}
	if res == nil {
		return err
	}
	return l.Report.Finish(ctx, res, err)
}
