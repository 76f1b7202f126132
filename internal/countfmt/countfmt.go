// Package countfmt formats the counts by cause that a result carries (messages unsent or
// unexpected, subscriptions refused) for the text summaries of bench and report, so that
// both write them alike.
package countfmt

import (
	"fmt"
	"maps"
	"slices"
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
