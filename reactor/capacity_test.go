package reactor

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckCapacity(t *testing.T) {
	if err := CheckCapacity(28232, 1, 32768, 60999); err != nil {
		t.Errorf("exactly the range must fit: %v", err)
	}
	err := CheckCapacity(100000, 2, 32768, 60999)
	if !errors.Is(err, ErrAddrCapacity) {
		t.Fatalf("100000 over 2 addresses: err = %v, want ErrAddrCapacity", err)
	}
	for _, want := range []string{"100000 connections", "need 4 source addresses, have 2", "32768-60999 gives 28232 ports", "--bind"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
	if err := CheckCapacity(100000, 4, 32768, 60999); err != nil {
		t.Errorf("4 addresses must fit 100000: %v", err)
	}
}
