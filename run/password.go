package run

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/mqblast/mqblast/internal/secret"
	"github.com/mqblast/mqblast/run/spec"
	"github.com/mqblast/mqblast/scenario"
)

// readPasswordFile returns the first line of path, its line ending stripped. The password
// itself never appears in an error.
func readPasswordFile(path string) (string, error) {
	return readSecretLine("password_file", path, "password")
}

// readSecretLine returns the first line of the file path, the Spec's field, which holds a
// secret (what names it); its errors never quote the file's content.
func readSecretLine(field, path, what string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", usage(spec.Errorf(field, "{"+field+"} %s: cannot read it: %v (give a readable file whose first line is the %s)", path, err, what))
	}
	defer f.Close() //nolint:errcheck
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", usage(spec.Errorf(field, "{"+field+"} %s: cannot read it: %v (give a readable file whose first line is the %s)", path, err, what))
	}
	pw := strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
	if pw == "" {
		return "", usage(spec.Errorf(field, "{"+field+"} %s: the first line is empty (want the %s on it)", path, what))
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
// sends none without one). A group's own password that is the marker stands for the one
// given for that group, else its entry in $MQBLAST_GROUP_PASSWORDS.
func resolvePassword(s *scenario.Scenario, file string, log io.Writer, given secrets, getenv func(string) string) error {
	if err := pickPassword(s, file, log, given.run, getenv); err != nil {
		return err
	}
	if err := pickGroupPasswords(s, given.groups, getenv); err != nil {
		return err
	}
	if err := s.CheckCredentials(); err != nil {
		return kind(errInvalid, err)
	}
	return nil
}

// secrets are the passwords given outside the Spec: the run's, and those of groups' own
// servers by group name.
type secrets struct {
	run    string
	groups map[string]string
}

// pickGroupPasswords sets each group password of s that is the marker: the one given for
// the group, else the group's in $MQBLAST_GROUP_PASSWORDS (getenv), which must then have it.
func pickGroupPasswords(s *scenario.Scenario, given map[string]string, getenv func(string) string) error {
	var env map[string]string
	read := false
	for i, g := range s.Groups {
		if g == nil || g.Server == nil || g.Server.Password != scenario.RedactedPassword {
			continue
		}
		if pw := given[g.Name]; pw != "" {
			g.Server.Password = pw
			continue
		}
		if !read {
			var err error
			if env, err = secret.GroupPasswords(getenv(secret.GroupPasswordsEnv)); err != nil {
				return usage(err)
			}
			read = true
		}
		pw := env[g.Name]
		if pw == "" || pw == scenario.RedactedPassword {
			return usage(fmt.Errorf("groups[%d].server.password is %q, the marker that stands for the password in what mqblast writes: "+
				"give group %q's password with --set groups.%s.server.password=... or in $%s ({%q: \"...\"})",
				i, scenario.RedactedPassword, g.Name, g.Name, secret.GroupPasswordsEnv, g.Name))
		}
		g.Server.Password = pw
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
