package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/termtext"
	"github.com/mqblast/mqblast/result"
)

// hostile is what a hostile server puts in its certificate's names and a crafted document
// in its strings: an OSC that retitles the terminal (ended by BEL), a colour, and in
// documents a line of its own and a right-to-left override.
const hostile = "\x1b]0;pwned\x07\x1b[31m"

// hostileTLS serves a self-signed certificate whose subject alternative name and common
// name are hostile on a free loopback port, completing no handshake (the client refuses
// the certificate), until the test ends. It returns the port.
func hostileTLS(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: hostile},
		DNSNames: []string{hostile}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(5 * time.Second))
				_ = c.(*tls.Conn).Handshake()
			}()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// checkTerminal fails t when out has a character that termtext escapes (but the newlines
// that end lines) or a line that a crafted string started.
func checkTerminal(t *testing.T, what, out string) {
	t.Helper()
	for i, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if esc := termtext.Line(line); esc != line {
			t.Errorf("%s: line %d holds raw control characters: %q", what, i+1, line)
		}
		if strings.HasPrefix(line, "FORGED") {
			t.Errorf("%s: line %d was started by a crafted string: %q", what, i+1, line)
		}
	}
}

// TestHostileTextEscaped drives the binary against a TLS server whose certificate names
// carry terminal escapes: the hostname-mismatch error reaches stderr, the summary on stdout
// and the result document's error example escaped (\x1b, \x07), never raw. Then report,
// compare and report --hlog read that document with escapes, a newline and a bidi override
// written into its broker, tool version, evidence and error example, and print none of
// them raw; the interval log's header stays one line.
func TestHostileTextEscaped(t *testing.T) {
	t.Parallel()
	mqblastBin(t) // the integration tier: skipped with -short before a server starts
	port := hostileTLS(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "tls.json")
	// --sni: the certificate is checked against a name, so crypto/x509 lists the
	// certificate's names in its error (for an address it names none); no --cacert: the
	// chain is not trusted either, and the names are in the error all the same.
	r := runBin(t, "conn", "-H", "127.0.0.1", "-p", port, "--ssl", "--sni", "broker.test", "-c", "2", "-R", "1000",
		"--hold", "200ms", "--out", out)
	if r.code != exitFailed {
		t.Fatalf("conn against a certificate for another name: exit %d, want %d\nstdout %s\nstderr %s", r.code, exitFailed, r.stdout, r.stderr)
	}
	checkTerminal(t, "conn stdout", r.stdout)
	checkTerminal(t, "conn stderr", r.stderr)
	want := `certificate is valid for \x1b]0;pwned\x07\x1b[31m, not broker.test`
	if !strings.Contains(r.stderr, want) || !strings.Contains(r.stdout, want) {
		t.Errorf("conn: the escaped certificate name %q is not on stderr and stdout\nstdout %s\nstderr %s", want, r.stdout, r.stderr)
	}
	res, err := result.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) == 0 || !strings.Contains(res.Errors[0].Example, want) {
		t.Fatalf("result: errors %+v, want an example with %q", res.Errors, want)
	}

	// The same document, crafted.
	var doc map[string]any
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	crafted := hostile + "\nFORGED line\r\u202e"
	doc["broker"] = []string{crafted}
	doc["tool_version"] = crafted
	doc["broker_stalled"] = map[string]any{"stalled": true, "evidence": []string{crafted}}
	doc["errors"].([]any)[0].(map[string]any)["example"] = crafted
	doc["errors"].([]any)[0].(map[string]any)["kind"] = crafted
	if b, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	craftedPath := filepath.Join(dir, "crafted.json")
	if err := os.WriteFile(craftedPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	hlog := filepath.Join(dir, "crafted.hlog")
	for _, args := range [][]string{
		{"report", craftedPath, "--hlog", hlog},
		{"compare", out, craftedPath},
	} {
		r := runBin(t, args...)
		if r.code != 0 {
			t.Errorf("%s: exit %d\nstdout %s\nstderr %s", args[0], r.code, r.stdout, r.stderr)
		}
		checkTerminal(t, args[0]+" stdout", r.stdout)
		checkTerminal(t, args[0]+" stderr", r.stderr)
		if !strings.Contains(r.stdout, `\x1b]0;pwned\x07\x1b[31m\nFORGED line\r\u202e`) {
			t.Errorf("%s: the crafted broker is not shown escaped:\n%s", args[0], r.stdout)
		}
	}
	lb, err := os.ReadFile(hlog)
	if err != nil {
		t.Fatal(err)
	}
	checkTerminal(t, "--hlog", string(lb))
	if head, _, _ := strings.Cut(string(lb), "\n"); !strings.HasPrefix(head, `#[mqblast \x1b]0;pwned\x07\x1b[31m\nFORGED line\r\u202e interval log`) {
		t.Errorf("--hlog: the header's first line is %q, want the tool version escaped in it", head)
	}
}
