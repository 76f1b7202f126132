//go:build !linux

package bench

import "os"

// isTerminal reports false off Linux: the progress is printed as interval lines.
func isTerminal(*os.File) bool { return false }
