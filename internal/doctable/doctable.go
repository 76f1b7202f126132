// Package doctable reads a column of the tables in the repository's Markdown docs, for the
// tests that hold a doc's list (metrics, CSV columns) to what the code has.
package doctable

import (
	"bufio"
	"os"
	"regexp"
	"strings"
)

// Column returns, in file order, the first cells of the table rows in the sections of the
// Markdown file at path whose "## " heading starts with heading. A row counts when it
// matches row, whose first group is the cell returned (e.g. "^\\| `([^`]+)`").
func Column(path, heading string, row *regexp.Regexp) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var names []string
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "## ") {
			in = strings.HasPrefix(l, heading)
			continue
		}
		if m := row.FindStringSubmatch(l); in && m != nil {
			names = append(names, m[1])
		}
	}
	return names, sc.Err()
}
