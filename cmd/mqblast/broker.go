package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mqblast/mqblast/broker"
)

func newBrokerCmd() *cobra.Command {
	var listen string
	var private bool
	cmd := &cobra.Command{
		Use:     "broker [--listen ADDR]",
		Short:   "Run the embedded MQTT broker (loopback only) for first runs and tests",
		Long:    helpText("broker"),
		Example: examples("broker"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			start := broker.Start
			if private {
				start = broker.StartPrivate
			}
			b, err := start(listen, cmd.ErrOrStderr())
			if err != nil {
				return usageError(err)
			}
			defer b.Close() //nolint:errcheck
			if _, err := fmt.Fprintf(cmd.OutOrStdout(), "listening on %s\n", b.Addr()); err != nil {
				return err
			}
			<-cmd.Context().Done()
			return nil
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:1883", "address to listen on: loopback only, an IP or a name such as localhost (port 0 picks a free port)")
	cmd.Flags().BoolVar(&private, "private-netns", false, "internal: listen on any address, in a private network namespace (mqblast study behind the packet emulator)")
	_ = cmd.Flags().MarkHidden("private-netns")
	return cmd
}
