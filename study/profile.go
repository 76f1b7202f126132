package study

import (
	"fmt"
	"strings"
)

// ProfileLocal is the network as it is: no emulation.
const ProfileLocal = "local"

// CheckProfile reports whether name is a network profile a campaign may list.
func CheckProfile(name string) error {
	if name == ProfileLocal {
		return nil
	}
	for _, p := range []string{"optimal", "typical", "worst", "cloud"} {
		if name == p {
			return nil
		}
	}
	if strings.Contains(name, "=") {
		return nil
	}
	return fmt.Errorf("not a network profile (want local, optimal, typical, worst, cloud or custom values such as delay=2ms,jitter=0.4ms,loss=0.03%%)")
}

// applyProfile prepares a cell's network profile and returns how to wrap the broker's
// start command for it (nil: as is).
func applyProfile(name string) (func([]string) []string, error) {
	if name == ProfileLocal {
		return nil, nil
	}
	return nil, fmt.Errorf("network profile %q: network profiles need tuning's user-space packet emulator (mqblast net), "+
		"which this build does not have; only cells with profile local run", name)
}
