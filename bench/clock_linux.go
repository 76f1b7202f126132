package bench

import (
	"golang.org/x/sys/unix"

	"github.com/mqblast/mqblast/result"
)

func hostClock() *result.Clock {
	var tx unix.Timex // Modes 0: read only
	state, err := unix.Adjtimex(&tx)
	if err != nil {
		return nil
	}
	return &result.Clock{MaxErrorUS: int64(tx.Maxerror), EstErrorUS: int64(tx.Esterror),
		Synchronized: tx.Status&unix.STA_UNSYNC == 0 && state != unix.TIME_ERROR}
}
