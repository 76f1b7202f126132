package run

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mqblast/mqblast/internal/child"
)

// embeddedBroker is `mqblast broker` in a child process (the descriptor limit is per
// process) on a free loopback port.
type embeddedBroker struct {
	addr string
	p    *child.Process
}

// startEmbeddedBroker starts the embedded broker and says so on w.
func startEmbeddedBroker(w io.Writer) (*embeddedBroker, error) {
	p, err := child.Start(child.Spec{Name: "the embedded broker", Args: []string{"broker", "--listen", "127.0.0.1:0"},
		Signal: os.Interrupt, Timeout: 3 * time.Second})
	if err != nil {
		return nil, err
	}
	addr, err := p.AwaitReady("listening on ")
	if err != nil {
		p.Close()
		return nil, err
	}
	fmt.Fprintf(w, "no broker given: started the embedded broker (mochi-mqtt) on %s in a child process; "+
		"it shares this host's CPU, so measure your real broker with --broker\n", addr)
	return &embeddedBroker{addr: addr, p: p}, nil
}

// Close stops the broker.
func (b *embeddedBroker) Close() { b.p.Close() }
