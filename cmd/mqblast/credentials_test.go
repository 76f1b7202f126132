package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCredentialsRefused: a credentials file with an unknown column, or with fewer rows
// than a group has clients, is one line naming the scenario's credentials_file and the file
// (the column, or both counts), exit 3, and no socket reaches the broker; no password of
// the file is shown.
func TestCredentialsRefused(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := t.TempDir()
	for _, c := range []struct {
		name, body, want string
	}{
		{"unknown.csv", "client_id,pass\nquick-pub-0,hunter2\n", `column 2 of the header is "pass", not a column mqblast knows`},
		{"short.csv", "username,password\na,hunter2\nb,hunter2\n", "has 2 rows, fewer than the 100 clients of publishers"},
	} {
		p := filepath.Join(dir, c.name)
		if err := os.WriteFile(p, []byte(c.body), 0o600); err != nil {
			t.Fatal(err)
		}
		r := runBin(t, "run", "quick-p2p-100", "--broker", ln.Addr().String(), "--no-check", "--credentials", p)
		first := strings.SplitN(strings.TrimSpace(r.stderr), "\n", 2)[0]
		if r.code != exitInvalid || !strings.HasPrefix(first, "mqblast: quick-p2p-100: credentials_file: "+p) ||
			!strings.Contains(first, c.want) || strings.Contains(r.stderr, "hunter2") || strings.Contains(r.stderr, "connecting") {
			t.Errorf("%s: exit %d, want %d and a line holding %q:\n%s", c.name, r.code, exitInvalid, c.want, r.stderr)
		}
	}
	_ = ln.(*net.TCPListener).SetDeadline(time.Now().Add(100 * time.Millisecond))
	if conn, err := ln.Accept(); err == nil {
		conn.Close()
		t.Error("a client connected to the broker: the file was not refused before the first socket")
	}
}
