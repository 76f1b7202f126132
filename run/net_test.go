package run

import (
	"testing"
	"time"
)

// TestEmulatedProfile: a run in the emulator's client namespace records the profile it was
// given, canonical, with both directions.
func TestEmulatedProfile(t *testing.T) {
	n := (&emulated{Profile: "worst"}).network()
	if n == nil || n.Profile != "worst" || n.Via != "emulator" || n.Up.Delay != 3125*time.Microsecond || n.Down.Loss != 0.0005 {
		t.Errorf("worst: %+v", n)
	}
	if n := (&emulated{Profile: "up:delay=5ms"}).network(); n == nil || n.Up.Delay != 5*time.Millisecond || !n.Down.IsZero() {
		t.Errorf("up:delay=5ms: %+v", n)
	}
}
