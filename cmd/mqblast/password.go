package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/mqblast/mqblast/run"
	"github.com/mqblast/mqblast/scenario"
)

// passwordHelp explains where the password comes from, for the flags' help.
const passwordHelp = "read the broker password from the first line of FILE " +
	"(precedence: --password-file, then -P or --set server.password, then the scenario's server.password, then $" + run.PasswordEnv + ")"

// registerPasswordFile adds --password-file to fl.
func (rf *runFlags) registerPasswordFile(fl *pflag.FlagSet) {
	fl.StringVar(&rf.passwordFile, "password-file", "", passwordHelp)
}

// readPasswordFile returns the first line of path, its line ending stripped. The password
// itself never appears in an error.
func readPasswordFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", usageError(fmt.Errorf("--password-file %s: cannot read it: %w (give a readable file whose first line is the password)", path, err))
	}
	defer f.Close() //nolint:errcheck
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", usageError(fmt.Errorf("--password-file %s: cannot read it: %w (give a readable file whose first line is the password)", path, err))
	}
	pw := strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
	if pw == "" {
		return "", usageError(fmt.Errorf("--password-file %s: the first line is empty (want the password on it)", path))
	}
	return pw, nil
}

// resolvePassword sets the scenario's password by precedence: --password-file; else what s
// already holds (-P, --set server.password or the file's server.password); else
// $MQBLAST_PASSWORD. A password that is the redaction marker of result documents (a
// scenario copied out of a result) counts as none.
func resolvePassword(s *scenario.Scenario, rf *runFlags) error {
	if rf.passwordFile != "" {
		pw, err := readPasswordFile(rf.passwordFile)
		if err != nil {
			return err
		}
		s.Server.Password = pw
		return nil
	}
	redacted := s.Server.Password == scenario.RedactedPassword
	if s.Server.Password != "" && !redacted {
		return nil
	}
	if pw := os.Getenv(run.PasswordEnv); pw != "" {
		s.Server.Password = pw
		return nil
	}
	if redacted {
		return usageError(fmt.Errorf("server.password is %q, the marker result documents write instead of a password: "+
			"give the password with --password-file FILE or $%s", scenario.RedactedPassword, run.PasswordEnv))
	}
	return nil
}

// redactSet returns a --set argument fit for a message: the value of a password is hidden.
func redactSet(kv string) string {
	if strings.Contains(strings.ToLower(kv), "password") {
		k, _, _ := strings.Cut(kv, "=")
		if k == kv {
			k, _, _ = strings.Cut(kv, ":")
		}
		return k + "=(hidden)"
	}
	return kv
}
