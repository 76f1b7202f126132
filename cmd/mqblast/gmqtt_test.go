package main

import (
	"testing"

	"github.com/mqblast/mqblast/internal/testbroker"
)

// TestGMQTTP2P: quick-p2p-100 at QoS 0 and 1 against a real gmqtt (testbroker.StartGMQTT):
// every result's accounting holds, and the broker delivers.
func TestGMQTTP2P(t *testing.T) {
	t.Parallel()
	mqblastBin(t) // first: under -race it skips before the broker starts
	f := testbroker.StartGMQTT(t)
	foreignP2P(t, f)
}
