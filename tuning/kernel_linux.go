package tuning

import (
	"os"
)

// SameNetNS reports whether two /proc roots ("/proc/self", "/proc/PID") are in one network
// namespace: their ns/net links name the same namespace. It reports false when either link
// cannot be read.
func SameNetNS(rootA, rootB string) bool {
	a, err := os.Readlink(rootA + "/ns/net")
	if err != nil {
		return false
	}
	b, err := os.Readlink(rootB + "/ns/net")
	return err == nil && a == b
}
