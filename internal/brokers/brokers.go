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

// Kinds lists every kind Plan knows, in the order of the docs.
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
	Kind         string
	Version      string        // as far as its files tell, e.g. "3.10.8"; "" when they do not
	StartTimeout time.Duration // StartTimeout(Kind)

	bin  string // the program (or script) that runs it
	epmd string // RabbitMQ: Erlang's port mapper
	lib  string // aedes: the module's entry file
}

// StartTimeout is how long a broker of kind may take to accept MQTT on a busy 2-core
// host: RabbitMQ took 14-36 s there, aedes up to 6 s.
func StartTimeout(kind string) time.Duration {
	switch kind {
	case RabbitMQ:
		return 90 * time.Second
	case Aedes, GMQTT:
		return 30 * time.Second
	}
	return 15 * time.Second
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
		return fmt.Sprintf("GOBIN=%s go install github.com/DrmagicE/gmqtt/cmd/gmqttd@%s (or scripts/install-brokers.sh gmqtt of mqblast's source, where the module proxy refuses its version list)",
			Quote(filepath.Dir(gmqttBin())), gmqttVersion)
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

// Start is a planned broker: the files to write into its directory and the line that
// runs it.
type Start struct {
	Addr string // host:port of its MQTT listener
	// Line is the /bin/sh command line that runs the broker in the foreground, once Write
	// has written its files. Every process it starts stays in its process group, and a
	// SIGTERM to that group stops the broker cleanly.
	Line string
	// Log is the broker's own log file, beside what the line writes to stdout and
	// stderr; "" when it has none.
	Log   string
	Dir   string
	Files []File // its configuration, written by Write
}

// File is a file of a broker's directory.
type File struct {
	Name    string // in the broker's directory
	Content string
	Mode    os.FileMode
}

// Plan says how to start the broker on c's address in c.Dir (made absolute): the files
// and the line. It writes nothing; Write does. The extra ports it takes from c.FreePort
// are in the files, so a planned broker can be written and started again (a study's
// broker, restarted for each cell) on the same ports.
func (in *Installation) Plan(c Config) (*Start, error) {
	dir, err := filepath.Abs(c.Dir)
	if err != nil {
		return nil, err
	}
	c.Dir = dir
	var s *Start
	switch in.Kind {
	case RabbitMQ:
		s, err = in.planRabbitMQ(c)
	case Aedes:
		s = in.planAedes(c)
	case GMQTT:
		s = in.planGMQTT(c)
	default:
		return nil, fmt.Errorf("BUG: brokers: Plan of kind %q", in.Kind)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot plan %s in %s: %w", in.Kind, c.Dir, err)
	}
	s.Addr, s.Dir = net.JoinHostPort(c.Host, fmt.Sprint(c.Port)), c.Dir
	return s, nil
}

// Write makes the broker's directory and writes its files.
func (s *Start) Write() error {
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return fmt.Errorf("cannot make the broker's directory: %w", err)
	}
	for _, f := range s.Files {
		if err := os.WriteFile(filepath.Join(s.Dir, f.Name), []byte(f.Content), f.Mode); err != nil {
			return fmt.Errorf("cannot write the broker's %s: %w", f.Name, err)
		}
	}
	return nil
}

// path is the absolute path of a file of the broker's directory.
func (s *Start) path(name string) string { return filepath.Join(s.Dir, name) }

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
