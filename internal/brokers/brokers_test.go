package brokers

import (
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/mqblast/mqblast/codec"
)

// serveOnce accepts one connection on a loopback listener, reads what arrives for up to
// 2 s, hands it to got, and answers with reply (nothing when nil; then it closes).
func serveOnce(t *testing.T, reply []byte, got chan<- []byte) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 256)
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		n, _ := c.Read(buf)
		got <- buf[:n]
		if reply != nil {
			_, _ = c.Write(reply)
			_, _ = io.Copy(io.Discard, c)
		}
	}()
	return ln.Addr().String()
}

// TestHandshake: the CONNECT is a valid MQTT 3.1.1 one (codec decodes it), a CONNACK 0
// is ready, and a refusing CONNACK, another packet or a closed connection are not.
func TestHandshake(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		reply []byte
		err   string
	}{
		{"accepted", []byte{0x20, 0x02, 0x00, 0x00}, ""},
		{"refused", []byte{0x20, 0x02, 0x00, 0x05}, "return code 5"},
		{"not a connack", []byte{0x30, 0x02, 0x00, 0x00}, "not a CONNACK"},
		{"closed", nil, "no CONNACK"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := make(chan []byte, 1)
			addr := serveOnce(t, tc.reply, got)
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			err = Handshake(c, 3*time.Second)
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("Handshake: %v, want %q", err, tc.err)
			}
			raw := <-got
			h, body, n, err := codec.Split(raw, 1<<10)
			if err != nil || n != len(raw) || h.Type != codec.TypeConnect {
				t.Fatalf("the CONNECT % x: split %v, %d of %d bytes, type %v", raw, err, n, len(raw), h.Type)
			}
			var cp codec.Connect
			v, err := codec.DecodeConnect(body, &cp)
			if err != nil || v != codec.V311 || !cp.CleanStart || string(cp.ClientID) != "mqblast-ready" {
				t.Errorf("the CONNECT: version %v, %+v, %v", v, cp, err)
			}
		})
	}
}

// TestPlan: each broker's files hold its address (IPv6 in brackets where the format
// wants them), its line names them, and nothing is written before Write.
func TestPlan(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	port := 0
	free := func() (int, error) { port++; return 40000 + port, nil }
	for _, tc := range []struct {
		in   *Installation
		host string
		want map[string]string // file: text it must hold
		line string            // what the line runs
	}{
		{&Installation{Kind: RabbitMQ, bin: "/r/rabbitmq-server", epmd: "/e/epmd"}, "::1", map[string]string{
			"rabbitmq.conf":   "mqtt.listeners.tcp.default = [::1]:1883\n",
			"enabled_plugins": "[rabbitmq_mqtt].",
			"rabbitmq.sh":     "ERL_EPMD_PORT=40001 ",
		}, "exec /bin/sh " + dir + "/rabbitmq/rabbitmq.sh"},
		{&Installation{Kind: Aedes, bin: "/n/node", lib: "/c/node_modules/aedes/aedes.js"}, "127.0.0.1", map[string]string{
			"server.mjs": `await import("file:///c/node_modules/aedes/aedes.js")`,
		}, "exec /n/node " + dir + "/aedes/server.mjs 1883 127.0.0.1"},
		{&Installation{Kind: GMQTT, bin: "/g/gmqttd"}, "::1", map[string]string{
			"gmqttd.yml": `address: "[::1]:1883"`,
		}, "exec /g/gmqttd start -c " + dir + "/gmqtt/gmqttd.yml"},
	} {
		t.Run(tc.in.Kind, func(t *testing.T) {
			d := dir + "/" + tc.in.Kind
			st, err := tc.in.Plan(Config{Dir: d, Host: tc.host, Port: 1883, FreePort: free})
			if err != nil {
				t.Fatal(err)
			}
			if st.Addr != net.JoinHostPort(tc.host, "1883") {
				t.Errorf("addr %s", st.Addr)
			}
			files := map[string]string{}
			for _, f := range st.Files {
				files[f.Name] = f.Content
			}
			for name, want := range tc.want {
				if !strings.Contains(files[name], want) {
					t.Errorf("%s does not hold %q:\n%s", name, want, files[name])
				}
			}
			if !strings.Contains(st.Line, tc.line) {
				t.Errorf("line %q, want it to run %q", st.Line, tc.line)
			}
			if err := st.Write(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestFindNotInstalled: with an empty cache, aedes and gmqtt are ErrNotInstalled, with
// the command that installs them into that cache.
func TestFindNotInstalled(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("PATH", "/usr/bin:/bin")
	for kind, want := range map[string]string{
		Aedes: "npm install --prefix " + cache + "/mqblast/aedes aedes@1",
		GMQTT: cache + "/mqblast/gmqtt/gmqttd",
	} {
		_, err := Find(kind)
		if !errors.Is(err, ErrNotInstalled) || !strings.Contains(err.Error(), want) {
			t.Errorf("Find(%s): %v, want ErrNotInstalled naming %q", kind, err, want)
		}
	}
	if _, err := Find("hivemq"); err == nil || errors.Is(err, ErrNotInstalled) {
		t.Errorf("Find(hivemq): %v, want an unknown kind", err)
	}
}
