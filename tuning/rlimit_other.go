//go:build !linux

package tuning

import "errors"

// errNotLinux is returned where a limit is only read on Linux.
var errNotLinux = errors.New("tuning: RLIMIT_NOFILE is only read on Linux")

func ProcessNoFile() (NoFile, error) { return NoFile{}, errNotLinux }

// RaiseNoFile raises this process's RLIMIT_NOFILE; only on Linux.
func RaiseNoFile(uint64) (NoFile, error) { return NoFile{}, errNotLinux }
