package testbroker

import (
	"io"
	"log/slog"
	"net"
	"testing"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/auth"
	"github.com/mochi-mqtt/server/v2/listeners"
)

// StartMochi starts mochi-mqtt (the embedded broker's implementation) in this process on a
// free loopback port, allowing every client, with caps (nil: mochi's defaults) and hooks
// besides, and closes it when the test ends. It returns the server and its address.
func StartMochi(t testing.TB, caps *mqtt.Capabilities, hooks ...mqtt.Hook) (*mqtt.Server, string) {
	t.Helper()
	srv := mqtt.New(&mqtt.Options{Capabilities: caps, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	for _, h := range append([]mqtt.Hook{new(auth.AllowHook)}, hooks...) {
		if err := srv.AddHook(h, nil); err != nil {
			t.Fatal(err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.AddListener(listeners.NewNet("tcp", ln)); err != nil {
		t.Fatal(err)
	}
	if err := srv.Serve(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv, ln.Addr().String()
}
