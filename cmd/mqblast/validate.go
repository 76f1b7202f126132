package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mqblast/mqblast/run"
)

func newValidateCmd() *cobra.Command {
	var (
		sets    []string
		brokers []string
	)
	cmd := &cobra.Command{
		Use:   "validate SCENARIO...",
		Short: "Check scenario files without running them",
		Long: `validate reads each SCENARIO (a file, or a built-in name), applies the --set and --broker
overrides as run would, and checks it: unknown fields, wrong types, values out of range, the
rules of its type, combinations that cannot work, and thresholds whose path names no numeric
field of the result document. Every problem is printed on its own line to stderr, with the
file, the JSON path and the value:

  fanout.json: parameters.publish_rate: -5 is not a rate (must be > 0)

For each valid scenario it prints the size of its plan on stdout: clients, connections and
file descriptors, messages and bytes per second in and out, memory, connect time.

It exits 0 when every scenario is valid and 3 when any is not.`,
		Example: `  mqblast validate fanout.json
  mqblast validate *.json
  mqblast validate singlenode-p2p-50K-50K-50K-50K --set parameters.publish_rate=10`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError(errors.New("validate needs at least one scenario file or built-in name"))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			invalid, err := run.Validate(cmd.OutOrStdout(), cmd.ErrOrStderr(), args, sets, brokers)
			if err != nil {
				return err
			}
			if invalid > 0 {
				return withCode(exitInvalid, fmt.Errorf("%d of %d scenarios invalid", invalid, len(args)))
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&sets, "set", nil, "override a field, PATH=VALUE (e.g. parameters.publish_rate=10); repeatable")
	fl.StringSliceVar(&brokers, "broker", nil, "broker HOST:PORT[,HOST:PORT...] replacing the scenario's server")
	return cmd
}
