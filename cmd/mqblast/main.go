// Command mqblast is a load generator for MQTT brokers. See README.md.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/mqblast/mqblast/internal/child"
	"github.com/mqblast/mqblast/internal/termtext"
)

// parentGoneGrace bounds how long a child of mqblast takes to end once its parent is gone:
// longer than a guard waits for its program (guardTimeout).
const parentGoneGrace = guardTimeout + 5*time.Second

func main() { os.Exit(execute()) }

// execute executes the command line and returns the exit code; main alone exits.
func execute() int {
	parent, orphaned := context.WithCancel(context.Background())
	defer orphaned()
	ctx, stop := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if gone := child.WatchParent(); gone != nil {
		// The mqblast that started this process died (SIGKILL, the OOM killer): wind down
		// as on SIGTERM, and exit if that takes longer than parentGoneGrace.
		go func() {
			<-gone
			orphaned()
			time.Sleep(parentGoneGrace)
			os.Exit(exitInterrupted)
		}()
	}
	root := newRootCmd()
	cmd, err := root.ExecuteContextC(ctx)
	if err != nil {
		// Errors quote documents, files and brokers; a Spec field is named by its flag.
		fmt.Fprintf(os.Stderr, "mqblast: %s\n", termtext.Text(errorText(cmd, err)))
		if codeOf(err) == exitUsage {
			fmt.Fprintf(os.Stderr, "Run '%s --help' for usage.\n", root.CommandPath())
		}
	}
	return codeOf(err)
}
