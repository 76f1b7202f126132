// Package bytesize reads byte counts as scenario files and mqblast's flags write them
// ("64KiB", "1 MB", "256"), for scenario and the sink alike.
//
// It imports nothing of mqblast's.
package bytesize

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Units are the units Parse takes, for messages.
const Units = "B, KB, KiB, MB, MiB, GB or GiB"

// Parse reads a byte count: a whole number of bytes, or one with a unit (Units: KB is 1000
// bytes, KiB 1024, and so on), with or without a space between ("64KiB", "64 KiB", "1MB");
// at most 2^31-1 bytes. Its error names s and the units; range checks are the caller's.
func Parse(s string) (int, error) {
	t := strings.TrimSpace(s)
	num := strings.TrimRightFunc(t, func(r rune) bool { return r < '0' || r > '9' })
	unit := strings.TrimSpace(t[len(num):])
	mult := map[string]int{"": 1, "B": 1, "KB": 1000, "KiB": 1 << 10, "MB": 1000 * 1000, "MiB": 1 << 20,
		"GB": 1000 * 1000 * 1000, "GiB": 1 << 30}[unit]
	n, err := strconv.Atoi(num)
	if err != nil || mult == 0 || n > math.MaxInt32/mult {
		return 0, fmt.Errorf("%q is not a size (want bytes, or a whole number with a unit: %s; at most 2GiB)", s, Units)
	}
	return n * mult, nil
}
