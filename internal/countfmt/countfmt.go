// Package countfmt formats counts for people: the counts by cause that a result carries
// (messages unsent or unexpected, subscriptions refused) and large counts with thousands
// separators, so that the text summaries and the findings of result, report and tuning write
// them alike. It imports only the standard library (tuning, which imports none of the
// project's other packages, uses it).
package countfmt

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// ByCause formats a count map as " (a 3, b 1)", its causes in order and those at 0 left
// out, or "" when no count is above 0.
func ByCause(m map[string]int64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if m[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// Thousands formats n with commas between groups of three digits.
func Thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
