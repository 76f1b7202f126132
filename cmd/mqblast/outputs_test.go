package main

import (
	"bytes"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	rpt "github.com/mqblast/mqblast/report"
	"github.com/mqblast/mqblast/result"
)

// TestOutputFlagErrors: bad output flags are usage errors (exit 2) naming the flag and the
// fix, before any connection.
func TestOutputFlagErrors(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--metrics", "0.0.0.0:9464"}, "not a loopback address"},
		{[]string{"--metrics", "9464"}, "want HOST:PORT"},
		{[]string{"--metrics-hold", "5s"}, "need --metrics ADDR"},
		{[]string{"--csv", "/nonexistent/dir/r.csv"}, "--csv /nonexistent/dir/r.csv: cannot write there"},
		{[]string{"--hlog", os.TempDir()}, "--hlog " + os.TempDir() + ": is a directory"},
		{[]string{"--metrics", taken.Addr().String()}, "the port is taken"},
		{[]string{"--live", "0.0.0.0:8080"}, "--live 0.0.0.0:8080: not a loopback address"},
		{[]string{"--live", "8080"}, "want HOST:PORT"},
		{[]string{"--live-hold", "5s"}, "need --live ADDR"},
		{[]string{"--live-token-file", "/nonexistent/token"}, "need --live ADDR"},
		{[]string{"--live", "127.0.0.1:0", "--live-token-file", "/nonexistent/token"}, "--live-token-file /nonexistent/token: cannot read it"},
		{[]string{"--live", taken.Addr().String()}, "--live " + taken.Addr().String() + ": the port is taken"},
	} {
		r := runBin(t, append([]string{"run", "quick-conn-100", "--broker", "127.0.0.1:1", "--no-check"}, c.args...)...)
		if r.code != exitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", c.args, r.code, r.stderr, exitUsage, c.want)
		}
	}
}

// TestAddOutputFlags: `mqblast report RESULT --csv F --hlog F` writes the CSV and the log
// of a result read from a file (those of report.WriteCSV and report.WriteHlog, whose
// figures report's tests and run's TestRunMetricsMosquitto check), and an unwritable path
// is a usage error naming its flag.
func TestAddOutputFlags(t *testing.T) {
	src := filepath.Join("..", "..", "report", "testdata", "result.json")
	res, err := result.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	run := func(args ...string) error {
		cmd := newReportCmd()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(append([]string{src}, args...))
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		return cmd.Execute()
	}
	if err := run("--csv", filepath.Join(dir, "r.csv"), "--hlog", filepath.Join(dir, "r.hlog")); err != nil {
		t.Fatal(err)
	}
	for name, write := range map[string]func(io.Writer, *result.Result) error{"r.csv": rpt.WriteCSV, "r.hlog": rpt.WriteHlog} {
		var want bytes.Buffer
		if err := write(&want, res); err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || !bytes.Equal(got, want.Bytes()) {
			t.Errorf("%s (%v) is not the report package's:\n%s", name, err, got)
		}
	}
	if err := run("--csv", filepath.Join(dir, "no", "r.csv")); codeOf(err) != exitUsage || !strings.Contains(err.Error(), "--csv") {
		t.Errorf("unwritable --csv: %v, want a usage error naming --csv", err)
	}
}
