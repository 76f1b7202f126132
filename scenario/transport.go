package scenario

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// Broker transports (server.scheme, the scheme of a broker URL): mqtt (TCP), mqtts (TLS),
// ws (MQTT over WebSocket) and wss (over WebSocket over TLS).
var schemes = []string{"mqtt", "mqtts", "ws", "wss"}

// defaultPort is the port of a broker URL without one, by scheme.
var defaultPort = map[string]int{"mqtt": 1883, "mqtts": 8883, "ws": 8083, "wss": 8084}

// DefaultWSPath is the WebSocket request path when none is given.
const DefaultWSPath = "/mqtt"

// isWS reports whether scheme is a WebSocket one.
func isWS(scheme string) bool { return scheme == "ws" || scheme == "wss" }

// brokerURL is a parsed broker address.
type brokerURL struct {
	scheme, host, path string
	port               int
}

// String is "host:port" for plain TCP, "scheme://host:port[path]" otherwise.
func (b brokerURL) String() string {
	hp := net.JoinHostPort(b.host, strconv.Itoa(b.port))
	if b.scheme == "" || b.scheme == "mqtt" {
		return hp
	}
	return b.scheme + "://" + hp + b.path
}

// parseBroker checks "host:port", "host" (port 1883) or a URL scheme://host[:port][/path]
// with scheme mqtt, mqtts, ws or wss (the path only for ws and wss, /mqtt by default).
func parseBroker(b string) (brokerURL, error) {
	if !strings.Contains(b, "://") {
		hp, err := normalizeHostPort(b)
		if err != nil {
			return brokerURL{}, err
		}
		host, port, _ := net.SplitHostPort(hp)
		n, _ := strconv.Atoi(port)
		return brokerURL{scheme: "mqtt", host: host, port: n}, nil
	}
	u, err := url.Parse(b)
	if err != nil {
		return brokerURL{}, errors.New("is not a URL (want mqtt://, mqtts://, ws:// or wss://host:port)")
	}
	out := brokerURL{scheme: strings.ToLower(u.Scheme), host: u.Hostname()}
	if _, ok := defaultPort[out.scheme]; !ok {
		return out, fmt.Errorf("has scheme %q (want mqtt, mqtts, ws or wss)", u.Scheme)
	}
	if out.host == "" {
		return out, errors.New("has no host")
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return out, errors.New("has a user, query or fragment (give the username in server.username)")
	}
	out.port = defaultPort[out.scheme]
	if p := u.Port(); p != "" {
		if out.port, err = strconv.Atoi(p); err != nil || out.port < 1 || out.port > 65535 {
			return out, fmt.Errorf("has port %q (want 1..65535)", p)
		}
	}
	switch {
	case isWS(out.scheme):
		out.path = u.EscapedPath()
		if out.path == "" {
			out.path = DefaultWSPath
		}
	case u.Path != "" && u.Path != "/":
		return out, fmt.Errorf("has path %q: a path is only for ws:// and wss://", u.Path)
	}
	return out, nil
}

// BrokerHosts returns the host of each broker the scenario names (server.brokers, else
// server.hostname), nil when it names none (mqblast run then starts the embedded broker).
// A broker that does not parse is left out: Validate reports it.
func (s *Scenario) BrokerHosts() []string {
	if len(s.Server.Brokers) == 0 {
		if s.Server.Hostname == "" {
			return nil
		}
		return []string{s.Server.Hostname}
	}
	var out []string
	for _, b := range s.Server.Brokers {
		if u, err := parseBroker(b); err == nil {
			out = append(out, u.host)
		}
	}
	return out
}

// checkTransport checks server.scheme and server.path.
func (s *Scenario) checkTransport(l *errList) {
	sv := &s.Server
	if sv.Scheme != "" && !isScheme(sv.Scheme) {
		l.Add("server.scheme", "%s is not a scheme (want mqtt, mqtts, ws or wss)", show(sv.Scheme))
	}
	if sv.Path != "" {
		switch {
		case !isWS(sv.Scheme):
			l.Add("server.path", "%s: a path is only for scheme ws or wss", show(sv.Path))
		case !strings.HasPrefix(sv.Path, "/"):
			l.Add("server.path", "%s does not start with / (want e.g. \"/mqtt\")", show(sv.Path))
		}
	}
}

func isScheme(s string) bool {
	for _, x := range schemes {
		if s == x {
			return true
		}
	}
	return false
}

// serverAddr is the server's one broker as the engine takes it: "host:port" or a URL.
func (sv *Server) serverAddr() string {
	b := brokerURL{scheme: sv.Scheme, host: sv.Hostname, port: sv.Port}
	if isWS(sv.Scheme) {
		b.path = sv.Path
		if b.path == "" {
			b.path = DefaultWSPath
		}
	}
	return b.String()
}
