package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/run"
)

// TestPasswordReachesWorkers: with a broker that demands a password, a run split over two
// worker processes establishes every connection whether the password comes from -P,
// --password-file or $MQBLAST_PASSWORD; a wrong one is refused on every connection, and
// neither password appears in the output.
func TestPasswordReachesWorkers(t *testing.T) {
	t.Parallel()
	const user, pw, wrong = "bench", "s3cret-Pw-4711", "wr0ng-Pw-0815"
	m := testbroker.StartMosquitto(t, testbroker.Options{Users: map[string]string{user: pw}})
	host, port, _ := strings.Cut(m.Addr, ":")
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "pw")
	if err := os.WriteFile(pwFile, []byte(pw+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	conn := []string{"conn", "-H", host, "-p", port, "-c", "40", "-R", "1000", "--hold", "300ms", "-u", user,
		"--procs", "2", "--format", "json"}
	for _, tc := range []struct {
		name string
		args []string
		env  string
	}{
		{"flag", append(conn, "-P", pw), ""},
		{"file", append(conn, "--password-file", pwFile), ""},
		{"env", conn, pw},
		{"run-file", []string{"run", "quick-p2p-100", "--broker", m.Addr, "--procs", "2", "--duration", "2s",
			"--set", "parameters.warmup_sec=500ms", "--set", "server.username=" + user, "--password-file", pwFile, "--format", "json"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runBinEnv(t, tc.env, tc.args...)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			res := decodeResult(t, r)
			if res.Host.Procs != 2 || res.Connections.Established != int64(res.Connections.Target) {
				t.Fatalf("procs %d, established %d of %d, refused %v", res.Host.Procs,
					res.Connections.Established, res.Connections.Target, res.Connections.Refused)
			}
			if strings.Contains(r.stdout+r.stderr, pw) {
				t.Errorf("the password appears in the output")
			}
		})
	}
	r := runBin(t, append(conn, "-P", wrong)...)
	if r.code != exitFailed {
		t.Fatalf("wrong password: exit %d, want %d\n%s", r.code, exitFailed, r.stderr)
	}
	// Mosquitto refuses a wrong password with "not authorized" (CONNACK 5), other brokers
	// with "bad user name or password" (4).
	if ref := decodeResult(t, r).Connections.Refused; ref["bad_username_or_password"]+ref["not_authorized"] != 40 {
		t.Errorf("wrong password: refused %v, want 40 bad_username_or_password or not_authorized", ref)
	}
	if strings.Contains(r.stdout+r.stderr, wrong) {
		t.Errorf("the wrong password appears in the output:\n%s", r.stderr)
	}
	if r := runBin(t, append(conn, "--password-file", filepath.Join(dir, "nope"))...); r.code != exitUsage ||
		!strings.Contains(r.stderr, "--password-file") || !strings.Contains(r.stderr, "no such file") {
		t.Errorf("unreadable --password-file: exit %d\n%s", r.code, r.stderr)
	}
}

// TestPasswordNotInErrors: a mistyped password never appears in an error message.
func TestPasswordNotInErrors(t *testing.T) {
	const secret = "hunter2-secret"
	_, errOut, code := runMQ(t, "validate", "quick-p2p-100", "--set", "server.password=["+secret)
	if code != exitInvalid || strings.Contains(errOut, secret) || !strings.Contains(errOut, "server.password") {
		t.Errorf("--set server.password=[...: exit %d\n%s", code, errOut)
	}
	_, errOut, code = runMQ(t, "validate", "quick-p2p-100", "--set", "server.password:"+secret)
	if code != exitUsage || strings.Contains(errOut, secret) {
		t.Errorf("--set without '=': exit %d\n%s", code, errOut)
	}
}

// runBinEnv is runBin with $MQBLAST_PASSWORD set to password in the child's environment
// (as this process has it when empty), so that the test may run in parallel.
func runBinEnv(t *testing.T, password string, args ...string) cliRun {
	t.Helper()
	if password == "" {
		return runBin(t, args...)
	}
	return runBinEnvVars(t, []string{run.PasswordEnv + "=" + password}, args...)
}
