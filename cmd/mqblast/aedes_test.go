package main

import (
	"testing"

	"github.com/mqblast/mqblast/internal/testbroker"
)

// TestAedesP2P: quick-p2p-100 at QoS 0 and 1 against a real aedes (testbroker.StartAedes):
// every result's accounting holds, and the broker delivers.
func TestAedesP2P(t *testing.T) {
	t.Parallel()
	mqblastBin(t) // first: under -race it skips before the broker starts
	f := testbroker.StartAedes(t)
	foreignP2P(t, f)
}
