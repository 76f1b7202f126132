// Package textdist measures how far apart two words are, for the "did you mean" hints of
// error messages (scenario fields, threshold paths).
package textdist

import (
	"fmt"
	"strings"
)

// Distance is the Levenshtein distance between a and b (insertions, deletions and
// substitutions of bytes); words longer than 64 bytes are 99 apart from everything, as
// nobody mistypes those.
func Distance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 99
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Suggest returns ` (did you mean "x"?)` for the candidate closest to name, ignoring case,
// or "" when none is close: one edit away, two for names of six letters or more, or (three
// letters or more) a prefix of the other.
func Suggest(name string, candidates []string) string {
	lname := strings.ToLower(name)
	best, bestD := "", 99
	for _, c := range candidates {
		lc := strings.ToLower(c)
		d := Distance(lname, lc)
		if d > 2 || (d == 2 && len(name) < 6) {
			d = 99
		}
		if d == 99 && len(name) >= 3 && len(c) >= 3 && (strings.HasPrefix(lc, lname) || strings.HasPrefix(lname, lc)) {
			d = 3
		}
		if d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}
