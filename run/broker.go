package run

import (
	"fmt"
	"io"

	"github.com/mqblast/mqblast/broker"
)

// startEmbeddedBroker starts the embedded broker of exe in a child process and says so on w.
func startEmbeddedBroker(w io.Writer, exe string) (*broker.Child, error) {
	b, err := broker.StartChild(exe)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "no broker given: started the embedded broker (mochi-mqtt) on %s in a child process; "+
		"it shares this host's CPU, so measure your real broker with --broker\n", b.Addr)
	return b, nil
}
