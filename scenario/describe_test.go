package scenario

import "testing"

func TestFormatting(t *testing.T) {
	for in, want := range map[float64]string{0: "-", 1: "1", 950: "950", 1000: "1K", 1005: "1005", 1500: "1.5K",
		50500: "50.5K", 250000: "250K", 1e6: "1M", 2e6: "2M", 0.5: "0.5"} {
		if got := fmtCount(in); got != want {
			t.Errorf("fmtCount(%v) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[float64]string{100: "100 B", 1536: "1.5 KiB", 64 << 20: "64.0 MiB"} {
		if got := bytesIEC(in); got != want {
			t.Errorf("bytesIEC(%v) = %q, want %q", in, got, want)
		}
	}
}
