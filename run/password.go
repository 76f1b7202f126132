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
// --password-file, if not ""); else what s
// already holds (-P, --set server.password or the file's server.password); else
// $MQBLAST_PASSWORD. A password that is the redaction marker of result documents (a
// scenario copied out of a result) counts as none.
func ResolvePassword(s *scenario.Scenario, file string) error {
	if file != "" {
		pw, err := readPasswordFile(file)
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
	if pw := os.Getenv(PasswordEnv); pw != "" {
		s.Server.Password = pw
		return nil
	}
	if redacted {
		return usage(fmt.Errorf("server.password is %q, the marker result documents write instead of a password: "+
			"give the password with --password-file FILE or $%s", scenario.RedactedPassword, PasswordEnv))
	}
	return nil
}
