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
		Use:     "validate SCENARIO...",
		Short:   "Check scenario files without running them",
		Long:    helpText("validate"),
		Example: examples("validate"),
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
