package main

import (
	"strings"
	"testing"
)

func TestAddrsDryRun(t *testing.T) {
	out, code, err := runCLI(t, "addrs", "add", "--dev", "eth9", "--cidr", "10.20.0.0/24", "--count", "3", "--dry-run")
	if code != exitOK {
		t.Fatalf("exit %d: %v", code, err)
	}
	want := "ip address add 10.20.0.1/24 dev eth9\nip address add 10.20.0.2/24 dev eth9\nip address add 10.20.0.3/24 dev eth9\n"
	if out != want {
		t.Errorf("add:\n%s\nwant:\n%s", out, want)
	}
	out, _, _ = runCLI(t, "addrs", "del", "--dev", "eth9", "--cidr", "10.20.0.0/24", "--count", "2", "--dry-run", "--netns", "ns1")
	if want := "ip -n ns1 address del 10.20.0.2/24 dev eth9\nip -n ns1 address del 10.20.0.1/24 dev eth9\n"; out != want {
		t.Errorf("del:\n%s\nwant:\n%s", out, want)
	}
}

func TestAddrsUsage(t *testing.T) {
	for _, args := range [][]string{
		{"addrs", "add", "--cidr", "10.0.0.0/24"},
		{"addrs", "add", "--dev", "eth0"},
		{"addrs", "add", "--dev", "eth0", "--cidr", "10.0.0.0/30", "--count", "3"},
		{"addrs", "del", "--dev", "eth0", "--cidr", "nonsense"},
		{"addrs", "add", "--dev", "eth0", "--cidr", "10.0.0.0/24", "--count", "0"},
	} {
		if _, code, err := runCLI(t, args...); code != exitUsage {
			t.Errorf("%s: exit %d (%v), want %d", strings.Join(args, " "), code, err, exitUsage)
		}
	}
}
