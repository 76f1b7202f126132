package brokers

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Kinds of broker.
const (
	RabbitMQ = "rabbitmq"
	Aedes    = "aedes"
	GMQTT    = "gmqtt"
)

// Kinds lists every kind Prepare knows, in the order of the docs.
var Kinds = []string{RabbitMQ, Aedes, GMQTT}

// ErrNotInstalled is returned by Find (errors.Is) when the broker is not on this host; its
// message names the command that installs it.
var ErrNotInstalled = errors.New("brokers: not installed")

type notInstalled struct{ kind, what, install string }

func (e *notInstalled) Error() string {
	return fmt.Sprintf("%s is not installed (%s); install it with: %s", e.kind, e.what, e.install)
}
func (e *notInstalled) Is(target error) bool { return target == ErrNotInstalled }

// Installation is a broker found on this host.
type Installation struct {
	Kind    string
	Version string // as far as its files tell, e.g. "3.10.8"; "" when they do not
	// StartTimeout is how long it may take to accept MQTT on a shared 2-core host.
	StartTimeout time.Duration

	bin  string // the program (or script) that runs it
	epmd string // RabbitMQ: Erlang's port mapper
	lib  string // aedes: the module's entry file
}

// Install is the command that installs a broker of kind on a Debian host, with the
// cache directory of this user spelled out.
func Install(kind string) string {
	switch kind {
	case RabbitMQ:
		return "apt-get install -y rabbitmq-server"
	case Aedes:
		return fmt.Sprintf("npm install --prefix %s aedes@1", Quote(aedesDir()))
	case GMQTT:
		return fmt.Sprintf("go mod download -json %s (then go build ./cmd/gmqttd from its Dir into %s), which scripts/install-brokers.sh gmqtt does",
			gmqttModule, Quote(gmqttBin()))
	}
	return ""
}

// Find looks for a broker of kind on this host. A broker that is not installed is an
// ErrNotInstalled whose message says how to install it.
func Find(kind string) (*Installation, error) {
	switch kind {
	case RabbitMQ:
		return findRabbitMQ()
	case Aedes:
		return findAedes()
	case GMQTT:
		return findGMQTT()
	}
	return nil, fmt.Errorf("brokers: %q is not a broker kind (want %s)", kind, strings.Join(Kinds, ", "))
}

// CacheDir is where the brokers that do not come as a system package are installed:
// $XDG_CACHE_HOME/mqblast, else ~/.cache/mqblast (os.UserCacheDir), else
// $TMPDIR/mqblast-cache.
func CacheDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "mqblast")
	}
	return filepath.Join(os.TempDir(), "mqblast-cache")
}

// Config is where and how a broker is started.
type Config struct {
	Dir  string // its own directory: configuration, data and log; created if missing
	Host string // the address it listens on
	Port int
	// FreePort returns another free port on Host, for the ports a broker needs beside
	// its listener (RabbitMQ's distribution and epmd ports).
	FreePort func() (int, error)
}

// Start is a prepared broker.
type Start struct {
	Addr string // host:port of its MQTT listener
	// Line is the /bin/sh command line that runs the broker in the foreground. Every
	// process it starts stays in its process group, and a SIGTERM to that group stops the
	// broker cleanly.
	Line string
	// Log is the broker's own log file, beside what the line writes to stdout and
	// stderr; "" when it has none.
	Log string
}

// Prepare writes the broker's configuration into c.Dir and returns how to start it.
func (in *Installation) Prepare(c Config) (*Start, error) {
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("cannot make the %s directory: %w", in.Kind, err)
	}
	dir, err := filepath.Abs(c.Dir)
	if err != nil {
		return nil, err
	}
	c.Dir = dir
	var s *Start
	switch in.Kind {
	case RabbitMQ:
		s, err = in.prepareRabbitMQ(c)
	case Aedes:
		s, err = in.prepareAedes(c)
	case GMQTT:
		s, err = in.prepareGMQTT(c)
	default:
		return nil, fmt.Errorf("BUG: brokers: Prepare of kind %q", in.Kind)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot prepare %s in %s: %w", in.Kind, c.Dir, err)
	}
	s.Addr = net.JoinHostPort(c.Host, fmt.Sprint(c.Port))
	return s, nil
}

// Handshake sends an MQTT 3.1.1 CONNECT (clean session, client id "mqblast-ready") on
// conn and waits up to timeout for a CONNACK that accepts it. It does not close conn.
func Handshake(conn net.Conn, timeout time.Duration) error {
	_ = conn.SetDeadline(time.Now().Add(timeout))
	defer conn.SetDeadline(time.Time{}) //nolint:errcheck
	id := "mqblast-ready"
	pkt := []byte{
		0x10, byte(10 + 2 + len(id)), // CONNECT, remaining length
		0x00, 0x04, 'M', 'Q', 'T', 'T', // protocol name
		0x04,       // protocol level 4 (3.1.1)
		0x02,       // clean session
		0x00, 0x0a, // keep alive 10 s
		0x00, byte(len(id)), // client id
	}
	pkt = append(pkt, id...)
	if _, err := conn.Write(pkt); err != nil {
		return fmt.Errorf("cannot send CONNECT: %w", err)
	}
	var ack [4]byte
	if _, err := io.ReadFull(conn, ack[:]); err != nil {
		return fmt.Errorf("no CONNACK: %w", err)
	}
	if ack[0] != 0x20 || ack[1] != 0x02 {
		return fmt.Errorf("the answer to CONNECT is not a CONNACK: % x", ack)
	}
	if ack[3] != 0 {
		return fmt.Errorf("CONNACK refuses the connection: return code %d", ack[3])
	}
	_, _ = conn.Write([]byte{0xe0, 0x00}) // DISCONNECT
	return nil
}

// Quote quotes s for /bin/sh when it needs quoting.
func Quote(s string) string {
	plain := func(r rune) bool {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=,@%+", r)
	}
	if s != "" && strings.IndexFunc(s, func(r rune) bool { return !plain(r) }) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// writeFile writes a file of the broker's directory.
func writeFile(dir, name, content string, mode os.FileMode) (string, error) {
	p := filepath.Join(dir, name)
	return p, os.WriteFile(p, []byte(content), mode)
}
