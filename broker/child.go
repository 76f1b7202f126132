package broker

import (
	"os"
	"time"

	"github.com/mqblast/mqblast/internal/child"
)

// Child is the embedded broker in a child process (`mqblast broker`): the descriptor limit
// is per process, so that the run's clients and the broker's sockets do not share one.
type Child struct {
	Addr string // where it listens: a free loopback port
	p    *child.Process
}

// StartChild starts `mqblast broker` of exe ("": this binary) on a free loopback port and
// waits until it listens.
func StartChild(exe string) (*Child, error) {
	p, err := child.Start(child.Spec{Name: "the embedded broker", Exe: exe, Args: []string{"broker", "--listen", "127.0.0.1:0"},
		Signal: os.Interrupt, Timeout: 3 * time.Second})
	if err != nil {
		return nil, err
	}
	addr, err := p.AwaitReady("listening on ")
	if err != nil {
		p.Close()
		return nil, err
	}
	return &Child{Addr: addr, p: p}, nil
}

// Pid is the broker's process id.
func (c *Child) Pid() int { return c.p.Pid() }

// Close stops the broker.
func (c *Child) Close() { c.p.Close() }
