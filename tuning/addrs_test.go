package tuning

import (
	"strings"
	"testing"
)

func TestHostAddrs(t *testing.T) {
	t.Parallel()
	check := func(cidr string, count int, want string) {
		t.Helper()
		got, err := HostAddrs(cidr, count)
		var s []string
		for _, p := range got {
			s = append(s, p.String())
		}
		out := strings.Join(s, " ")
		if err != nil {
			out = "error: " + err.Error()
		}
		if !strings.HasPrefix(out, want) {
			t.Errorf("HostAddrs(%q, %d) = %s, want %s", cidr, count, out, want)
		}
	}
	check("10.0.0.0/24", 3, "10.0.0.1/24 10.0.0.2/24 10.0.0.3/24")
	check("10.0.0.5/24", 2, "10.0.0.5/24 10.0.0.6/24")
	check("10.0.0.0/16", 2, "10.0.0.1/16 10.0.0.2/16")
	check("10.0.0.250/24", 4, "10.0.0.250/24 10.0.0.251/24 10.0.0.252/24 10.0.0.253/24")
	check("10.0.0.0/24", 254, "10.0.0.1/24")
	check("10.0.0.0/24", 255, "error: cannot take 255 addresses from 10.0.0.0/24: it holds only 254")
	check("10.0.0.0/30", 3, "error: cannot take 3 addresses")
	check("10.0.0.0/31", 2, "10.0.0.0/31 10.0.0.1/31")
	check("10.0.0.7/32", 1, "10.0.0.7/32")
	check("fd00::/64", 2, "fd00::1/64 fd00::2/64")
	check("10.0.0.0/24", 0, "error: cannot add 0 addresses")
	check("10.0.0.300/24", 1, "error: cannot parse --cidr")
}

func TestAddrBatch(t *testing.T) {
	t.Parallel()
	addrs, err := HostAddrs("10.9.0.0/24", 3)
	if err != nil {
		t.Fatal(err)
	}
	add, err := AddrBatch("add", "veth0", addrs)
	if err != nil {
		t.Fatal(err)
	}
	if want := "address add 10.9.0.1/24 dev veth0\naddress add 10.9.0.2/24 dev veth0\naddress add 10.9.0.3/24 dev veth0\n"; add != want {
		t.Errorf("add script %q, want %q", add, want)
	}
	del, err := AddrBatch("del", "veth0", addrs)
	if err != nil {
		t.Fatal(err)
	}
	if want := "address del 10.9.0.3/24 dev veth0\naddress del 10.9.0.2/24 dev veth0\naddress del 10.9.0.1/24 dev veth0\n"; del != want {
		t.Errorf("del script %q, want %q", del, want)
	}
	for _, bad := range []struct{ op, dev string }{{"flush", "veth0"}, {"add", ""}, {"add", "eth0 label x"}} {
		if _, err := AddrBatch(bad.op, bad.dev, addrs); err == nil {
			t.Errorf("AddrBatch(%q, %q) accepted", bad.op, bad.dev)
		}
	}
}
