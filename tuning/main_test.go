package tuning

import (
	"os"
	"testing"

	"github.com/mqblast/mqblast/internal/testbroker"
)

// TestMain removes the mqblast binary that testbroker.Binary built for the tests.
func TestMain(m *testing.M) { os.Exit(testbroker.Main(m)) }
