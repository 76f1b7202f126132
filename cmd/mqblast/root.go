package main

import (
	"embed"
	"fmt"
	"runtime"
	"strings"

	"github.com/mqblast/mqblast/internal/profile"
	"github.com/spf13/cobra"
)

// Build information, set by `make build` through -ldflags -X.
var (
	version = "dev"
	commit  = "none"
	date    = "unknown"
)

// commands are mqblast's verbs (`mqblast --help` lists them sorted): every command of
// the binary is here, the hidden ones (the child processes' own) last.
func commands() []*cobra.Command {
	return []*cobra.Command{
		newRunCmd(), newLimitCmd(), newConnCmd(), newPubCmd(), newSubCmd(),
		newScenariosCmd(), newValidateCmd(), newCheckCmd(), newTuneCmd(), newAddrsCmd(),
		newReportCmd(), newCompareCmd(), newMergeCmd(), newStudyCmd(),
		newSinkCmd(), newNetCmd(), newBrokerCmd(), newVersionCmd(),
		newChildCmd(), newGuardCmd(),
	}
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "mqblast",
		Short:         "mqblast: a load generator for MQTT 3.1.1 and 5.0 brokers",
		Long:          helpText("mqblast"),
		Example:       examples("mqblast"),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError(err) })
	var cpuProfile, memProfile string
	stop := func() {}
	root.PersistentFlags().StringVar(&cpuProfile, "cpuprofile", "", "write a Go CPU profile of this process to FILE")
	_ = root.PersistentFlags().MarkHidden("cpuprofile")
	root.PersistentFlags().StringVar(&memProfile, "memprofile", "", "write a Go heap profile of this process to FILE when it ends")
	_ = root.PersistentFlags().MarkHidden("memprofile")
	root.PersistentPreRunE = func(*cobra.Command, []string) (err error) {
		stop, err = profile.Start(cpuProfile, memProfile)
		return usageError(err)
	}
	root.PersistentPostRun = func(*cobra.Command, []string) { stop() }
	root.AddCommand(commands()...)
	// Unknown subcommands and bad positional arguments are usage errors (exit 2).
	root.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return usageError(fmt.Errorf("unknown command %q", args[0]))
		}
		return nil
	}
	root.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	return root
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the version, commit and build date",
		Example: "  mqblast version",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "mqblast %s (commit %s, built %s, %s %s/%s)\n",
				version, commit, date, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		},
	}
}

// helps are the verbs' help texts, one file each (help/NAME.txt): the long help, then a
// line "%%" and the examples. Prose, kept apart from the code that wires the flags.
//
//go:embed help/*.txt
var helps embed.FS

// helpParts is help/name.txt's long help and examples, without their last newlines.
func helpParts(name string) (long, examples string) {
	b, err := helps.ReadFile("help/" + name + ".txt")
	if err != nil {
		panic("BUG: no help text " + name)
	}
	long, examples, _ = strings.Cut(string(b), "\n%%\n")
	return strings.TrimSuffix(long, "\n"), strings.TrimSuffix(examples, "\n")
}

// helpText is the long help of help/name.txt.
func helpText(name string) string { long, _ := helpParts(name); return long }

// examples are the examples of help/name.txt.
func examples(name string) string { _, ex := helpParts(name); return ex }
