package run

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/mqblast/mqblast/scenario"
)

// readPasswordFile returns the first line of path, its line ending stripped. The password
// itself never appears in an error.
func readPasswordFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", usage(fmt.Errorf("--password-file %s: cannot read it: %w (give a readable file whose first line is the password)", path, err))
	}
	defer f.Close() //nolint:errcheck
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", usage(fmt.Errorf("--password-file %s: cannot read it: %w (give a readable file whose first line is the password)", path, err))
	}
	pw := strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
	if pw == "" {
		return "", usage(fmt.Errorf("--password-file %s: the first line is empty (want the password on it)", path))
	}
	return pw, nil
}

// ResolvePassword sets the scenario's password by precedence: the first line of file (the
// --password-file, if not ""); else what s already holds (-P, --set server.password or the
// file's server.password); else $MQBLAST_PASSWORD, but only for a run that gives a username:
// a password from the environment is not sent to whatever broker a run without one
// targets (log says so). A password that is the redaction marker (a scenario copied out of
// a result, the command of a study's cell, a worker's scenario) stands for
// $MQBLAST_PASSWORD, which must then be set. The password is then checked against the
// username (Scenario.CheckCredentials: MQTT 3.1.1 sends none without one).
func ResolvePassword(s *scenario.Scenario, file string, log io.Writer) error {
	if err := resolvePassword(s, file, log); err != nil {
		return err
	}
	if err := s.CheckCredentials(); err != nil {
		return kind(ErrInvalid, err)
	}
	return nil
}

func resolvePassword(s *scenario.Scenario, file string, log io.Writer) error {
	if file != "" {
		pw, err := readPasswordFile(file)
		if err != nil {
			return err
		}
		s.Server.Password = pw
		return nil
	}
	env := os.Getenv(PasswordEnv)
	switch s.Server.Password {
	case scenario.RedactedPassword:
		if env == "" {
			return usage(fmt.Errorf("server.password is %q, the marker that stands for the password in what mqblast writes: "+
				"give the password with --password-file FILE or $%s", scenario.RedactedPassword, PasswordEnv))
		}
		s.Server.Password = env
	case "":
		if env == "" {
			return nil
		}
		if s.Server.Username == "" {
			fmt.Fprintf(log, "$%s is set, but this run gives no username (server.username, -u): the password is not sent\n", PasswordEnv)
			return nil
		}
		s.Server.Password = env
	}
	return nil
}

// WithoutPassword is a command line with the value of every --set of a secret field
// (server.password) replaced by the marker, and that value (the last one), which the
// process that runs it takes from $MQBLAST_PASSWORD instead of its argv.
func WithoutPassword(args []string) (out []string, password string) {
	out = make([]string, len(args))
	copy(out, args)
	for i := 0; i < len(out); i++ {
		a, prefix := out[i], ""
		switch {
		case a == "--set" && i+1 < len(out):
			i++
			a = out[i]
		case strings.HasPrefix(a, "--set="):
			prefix, a = "--set=", strings.TrimPrefix(a, "--set=")
		default:
			continue
		}
		if k, v, ok := strings.Cut(a, "="); ok && scenario.SecretPath(k) {
			out[i], password = prefix+k+"="+scenario.RedactedPassword, v
		}
	}
	return out, password
}
