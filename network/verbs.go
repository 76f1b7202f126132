package network

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/mqblast/mqblast/internal/fail"
	"github.com/mqblast/mqblast/tuning"
)

// ShowProfiles writes the named network profiles, or the one in args, with what each does
// each way (`mqblast net show`); then whether this kernel has netem, probed only as root.
func ShowProfiles(out io.Writer, args []string, root bool) error {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "PROFILE\tUP (client to broker)\tDOWN (broker to client)\t")
	if len(args) == 1 {
		p, err := ParseProfile(args[0])
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t\n", p, p.Up, p.Down)
	} else {
		for _, np := range tuning.NamedProfiles() {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", np.Profile.Name, np.Profile.Up, np.Profile.Down, np.About)
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if !root {
		fmt.Fprintln(out, "netem: not probed (root needed): 'net apply' needs sch_netem; 'net emulate' works without it")
		return nil
	}
	if err := tuning.NetemAvailable(); err != nil {
		fmt.Fprintf(out, "netem: not available here (%v)\n", err)
		return nil
	}
	fmt.Fprintln(out, "netem: available: 'mqblast net apply PROFILE --to ADDR' works here")
	return nil
}

func printCommands(w io.Writer, cmds [][]string) {
	for _, c := range cmds {
		fmt.Fprintf(w, "  %s\n", strings.Join(c, " "))
	}
}

// Apply puts the network profile on the path to the broker at to, on the interface dev
// (from the route to it when ""), with tc netem (`mqblast net apply`); with dryRun it
// prints the commands that apply and clear it instead.
func Apply(out io.Writer, profile, to, dev string, dryRun bool) error {
	p, err := ParseProfile(profile)
	if err != nil {
		return err
	}
	addr, dev, err := NetemTarget(to, dev)
	if err != nil {
		return err
	}
	plan, err := tuning.PlanNetem(p, dev, addr)
	if err != nil {
		return fail.Mark(fail.ErrUsage, err)
	}
	if dryRun {
		fmt.Fprintf(out, "would apply %s toward %s on %s:\n", p, addr, dev)
		printCommands(out, plan.Apply)
		fmt.Fprintln(out, "and clear it with:")
		printCommands(out, plan.Clear)
		return nil
	}
	return ApplyNetem(out, p, plan, addr)
}
