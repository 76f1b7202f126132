// Command mqblast is a load generator for MQTT brokers. See README.md.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/mqblast/mqblast/internal/termtext"
)

func main() { os.Exit(execute()) }

// execute executes the command line and returns the exit code; main alone exits.
func execute() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRootCmd()
	err := root.ExecuteContext(ctx)
	if err != nil {
		fmt.Fprintf(os.Stderr, "mqblast: %s\n", termtext.Text(err.Error())) // errors quote documents, files and brokers
		if codeOf(err) == exitUsage {
			fmt.Fprintf(os.Stderr, "Run '%s --help' for usage.\n", root.CommandPath())
		}
	}
	return codeOf(err)
}
