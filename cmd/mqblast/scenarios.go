package main

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mqblast/mqblast/run"
	"github.com/mqblast/mqblast/scenario"
	"github.com/mqblast/mqblast/tuning"
)

func init() { register(newScenariosCmd) }

func newScenariosCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "scenarios",
		Short: "List the built-in scenarios",
		Long: `scenarios lists the scenarios built into mqblast: the Open MQTT Benchmark Suite cases under
their suite names (singlenode-p2p-50K-50K-50K-50K: publishers, subscribers, topics and
messages per second delivered; singlenode-conn-tcp-1M-5K: clients and connections per
second), and small quick-* ones that run in seconds, for a first run.

Any command that takes a SCENARIO takes a built-in name as well as a file.
'mqblast scenarios show NAME' prints a built-in's JSON, ready to copy and edit; every field
of the file (type, default, meaning) is described in docs/scenario.md.`,
		Example: `  mqblast scenarios
  mqblast scenarios show singlenode-fanout-5-1000-5-250K > fanout.json`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError(fmt.Errorf("unknown scenarios command %q (want show NAME)", args[0]))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tTYPE\tCLIENTS\tPUBS\tSUBS\tCONN/S\tPUB MSG/S\tRECV MSG/S\tDURATION")
			for _, in := range scenario.Builtins() {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", in.Name, in.Type,
					count(float64(in.Clients)), count(float64(in.Publishers)), count(float64(in.Subscribers)),
					count(in.ConnectionRate), count(in.PublishPerSec), count(in.ReceivePerSec), span(in.Duration))
			}
			return tw.Flush()
		},
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "show NAME",
		Short: "Print a built-in scenario's JSON",
		Long: `show prints the JSON file of the built-in scenario NAME, the format 'mqblast run' and
'mqblast validate' read. Save it, edit it, and run the file. The reference of every field
(type, default, meaning) is docs/scenario.md.`,
		Example: `  mqblast scenarios show quick-p2p-100
  mqblast scenarios show singlenode-p2p-50K-50K-50K-50K > p2p.json`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError(fmt.Errorf("show takes one scenario name, got %d arguments", len(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			data, ok := scenario.BuiltinJSON(args[0])
			if !ok {
				return usageError(fmt.Errorf("no built-in scenario %q (mqblast scenarios lists them)", args[0]))
			}
			_, err := cmd.OutOrStdout().Write(data)
			return err
		},
	})
	return cmd
}

// planNeeds turns `mqblast check SCENARIO` into what the scenario's plan needs from this host.
func planNeeds(_ context.Context, arg string) (tuning.Needs, error) {
	s, err := scenario.Resolve(arg)
	if err != nil {
		return tuning.Needs{}, withCode(exitInvalid, err)
	}
	p, err := scenario.NewPlan(s)
	if err != nil {
		return tuning.Needs{}, withCode(exitInvalid, err)
	}
	return run.Needs(p), nil
}

// count formats a count or rate compactly: 950, 1.5K, 50K, 2M.
func count(x float64) string {
	switch {
	case x == 0:
		return "-"
	case x >= 1e6:
		return trim(x/1e6) + "M"
	case x >= 1e4 || (x >= 1e3 && math.Mod(x, 100) == 0):
		return trim(x/1e3) + "K"
	}
	return trim(x)
}

func trim(x float64) string {
	if x == math.Trunc(x) {
		return strconv.FormatFloat(x, 'f', 0, 64)
	}
	s := strconv.FormatFloat(x, 'f', 1, 64)
	return strings.TrimSuffix(s, ".0")
}

// span formats a duration without zero units: 30m, 1h30m, 10s, 1.5s.
func span(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// bytesIEC formats a byte count with binary units: 512 B, 1.5 KiB, 64 MiB, 2.1 GiB.
func bytesIEC(b float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for b >= 1024 && i < len(units)-1 {
		b /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f B", b)
	}
	return fmt.Sprintf("%.1f %s", b, units[i])
}
