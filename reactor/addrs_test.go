package reactor

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestParseAddrs(t *testing.T) {
	lookup := func(name string) ([]netip.Addr, error) {
		if name == "veth-test" {
			return []netip.Addr{netip.MustParseAddr("10.9.0.1"), netip.MustParseAddr("10.9.0.2")}, nil
		}
		return nil, errors.New("no such interface")
	}
	cases := []struct {
		spec  string
		want  []string // every address in order
		wantS string
	}{
		{"127.0.0.2", []string{"127.0.0.2"}, "127.0.0.2"},
		{"127.0.0.2-127.0.0.4", []string{"127.0.0.2", "127.0.0.3", "127.0.0.4"}, "127.0.0.2-127.0.0.4"},
		{"127.0.0.254-127.0.1.1", []string{"127.0.0.254", "127.0.0.255", "127.0.1.0", "127.0.1.1"}, "127.0.0.254-127.0.1.1"},
		{"10.0.0.0/30", []string{"10.0.0.1", "10.0.0.2"}, "10.0.0.1-10.0.0.2"},
		{"10.0.0.4/31", []string{"10.0.0.4", "10.0.0.5"}, "10.0.0.4-10.0.0.5"},
		{"10.0.0.7/32", []string{"10.0.0.7"}, "10.0.0.7"},
		{"::1, 127.0.0.9", []string{"::1", "127.0.0.9"}, "::1,127.0.0.9"},
		{"fd00::fe-fd00::101", []string{"fd00::fe", "fd00::ff", "fd00::100", "fd00::101"}, "fd00::fe-fd00::101"},
		{"veth-test", []string{"10.9.0.1", "10.9.0.2"}, "10.9.0.1,10.9.0.2"},
	}
	for _, c := range cases {
		t.Run(c.spec, func(t *testing.T) {
			p, err := ParseAddrs(c.spec, lookup)
			if err != nil {
				t.Fatal(err)
			}
			if p.Len() != len(c.want) {
				t.Fatalf("Len = %d, want %d", p.Len(), len(c.want))
			}
			for i, w := range c.want {
				if got := p.At(i).String(); got != w {
					t.Errorf("At(%d) = %s, want %s", i, got, w)
				}
			}
			if got := p.At(len(c.want)).String(); got != c.want[0] {
				t.Errorf("At(Len) = %s, want it to wrap to %s", got, c.want[0])
			}
			if got := p.String(); got != c.wantS {
				t.Errorf("String = %q, want %q", got, c.wantS)
			}
		})
	}
}

func TestParseAddrsErrors(t *testing.T) {
	lookup := func(string) ([]netip.Addr, error) { return nil, errors.New("no such interface") }
	cases := map[string]string{
		"":                    "no address given",
		"127.0.0.9-127.0.0.2": "at or after the start",
		"127.0.0.1-::1":       "same family",
		"10.0.0.0/33":         "source address block",
		"10.0.0.0/1":          "too large",
		"eth-nope":            "not an address, range, block or interface",
		"127.0.0.1-127.0.0.x": "source address range",
	}
	for spec, want := range cases {
		_, err := ParseAddrs(spec, lookup)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseAddrs(%q) error = %v, want it to contain %q", spec, err, want)
		}
	}
}

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
