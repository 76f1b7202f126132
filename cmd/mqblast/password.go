package main

import (
	"github.com/spf13/pflag"

	"github.com/mqblast/mqblast/run"
)

// passwordHelp explains where the password comes from, for the flags' help.
const passwordHelp = "read the broker password from the first line of FILE " +
	"(precedence: --password-file, then -P or --set server.password, then the scenario's server.password, then $" + run.PasswordEnv +
	" when a username is given)"

// registerPasswordFile adds --password-file to fl.
func (rf *runFlags) registerPasswordFile(fl *pflag.FlagSet) {
	fl.StringVar(&rf.passwordFile, "password-file", "", passwordHelp)
}
