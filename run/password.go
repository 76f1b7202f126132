package run

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/mqblast/mqblast/run/spec"
	"github.com/mqblast/mqblast/scenario"
)

// readPasswordFile returns the first line of path, its line ending stripped. The password
// itself never appears in an error.
func readPasswordFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", usage(spec.Errorf("password_file", "{password_file} %s: cannot read it: %v (give a readable file whose first line is the password)", path, err))
	}
	defer f.Close() //nolint:errcheck
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", usage(spec.Errorf("password_file", "{password_file} %s: cannot read it: %v (give a readable file whose first line is the password)", path, err))
	}
	pw := strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
	if pw == "" {
		return "", usage(spec.Errorf("password_file", "{password_file} %s: the first line is empty (want the password on it)", path))
	}
	return pw, nil
}

// resolvePassword sets the scenario's password by precedence: the first line of file (the
// password_file, if not ""); else what s already holds (-P, --set server.password or the
// file's server.password); else $MQBLAST_PASSWORD (getenv), but only for a run that gives a
// username: a password from the environment is not sent to whatever broker a run without
// one targets (log says so). A password that is the redaction marker (a scenario copied
// out of a result, a study's cell, a worker's scenario, a command line's password kept out
// of the Spec) stands for given, else $MQBLAST_PASSWORD, which must then be set. The
// password is then checked against the username (Scenario.CheckCredentials: MQTT 3.1.1
// sends none without one).
func resolvePassword(s *scenario.Scenario, file string, log io.Writer, given string, getenv func(string) string) error {
	if err := pickPassword(s, file, log, given, getenv); err != nil {
		return err
	}
	if err := s.CheckCredentials(); err != nil {
		return kind(errInvalid, err)
	}
	return nil
}

func pickPassword(s *scenario.Scenario, file string, log io.Writer, given string, getenv func(string) string) error {
	if file != "" {
		pw, err := readPasswordFile(file)
		if err != nil {
			return err
		}
		s.Server.Password = pw
		return nil
	}
	env := getenv(PasswordEnv)
	switch s.Server.Password {
	case scenario.RedactedPassword:
		switch {
		case given != "":
			s.Server.Password = given
		case env == "":
			return usage(spec.Errorf("password_file", "server.password is %q, the marker that stands for the password in what mqblast writes: "+
				"give the password with {password_file} FILE or $%s", scenario.RedactedPassword, PasswordEnv))
		default:
			s.Server.Password = env
		}
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
