package main

import (
	"fmt"
	"io"
	"strconv"

	"github.com/mqblast/mqblast/result"
)

// warnClock says on w that shards on several hosts start apart by up to the clock's error.
func warnClock(w io.Writer, c *result.Clock) {
	switch {
	case c == nil:
		fmt.Fprintln(w, "warning: --start-at: the kernel does not report this host's clock error (adjtimex); shards on other hosts may start apart")
	case !c.Synchronized:
		fmt.Fprintf(w, "warning: --start-at: this host's clock is not synchronised (no NTP: adjtimex STA_UNSYNC, max error %s µs); "+
			"shards on other hosts start apart by up to that error\n", strconv.FormatInt(c.MaxErrorUS, 10))
	}
}
