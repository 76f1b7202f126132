//go:build race

package tier

// Race is true in a build with the race detector.
const Race = true
