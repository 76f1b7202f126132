//go:build !linux

package tuning

import (
	"context"
	"errors"
)

// errNoProcNet is returned where a network namespace or socket is only found on Linux.
var errNoProcNet = errors.New("tuning: sockets are only found through /proc on Linux")

// SameNetNS reports whether two /proc roots are in one network namespace; false but on Linux.
func SameNetNS(rootA, rootB string) bool { return false }

// FindListener returns the pid listening on TCP port; only on Linux.
func FindListener(ctx context.Context, port int) (int, error) { return 0, errNoProcNet }

// FindListeners returns the pids listening on TCP port; only on Linux.
func FindListeners(ctx context.Context, port int) (Listeners, error) {
	return Listeners{}, errNoProcNet
}
