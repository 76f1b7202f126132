package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/mqblast/mqblast/internal/bytesize"
	"github.com/mqblast/mqblast/sink"
)

func newSinkCmd() *cobra.Command {
	var sf sink.Flags
	cmd := &cobra.Command{
		Use:     "sink [--listen ADDR] [--procs N|auto] [--stats-json] [--tls-cert FILE --tls-key FILE [--tls-client-ca FILE]] [--ws [--ws-path PATH]]",
		Short:   "Run a near-free MQTT relay (an instrument, not a broker) to measure the client's ceiling",
		Long:    helpText("sink"),
		Example: examples("sink"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return sink.Main(cmd.Context(), &sf, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&sf.Listen, "listen", "127.0.0.1:0", "address to listen on (loopback unless --allow-remote; port 0 picks a free port)")
	fl.BoolVar(&sf.AllowRemote, "allow-remote", false, "allow a --listen address that is not loopback")
	fl.StringVar(&sf.Procs, "procs", "1", "processes on the one port (SO_REUSEPORT), or auto; relaying stays within each process; at most 4 per core unless --connections needs more")
	fl.IntVar(&sf.Connections, "connections", 0, "connections to hold: --procs auto takes this / descriptor limit processes (at least one per core), and the processes take them in turns, an equal share each")
	fl.BoolVar(&sf.StatsJSON, "stats-json", false, "write the counters as a JSON line on stdout every --interval and at exit")
	fl.DurationVar(&sf.Interval, "interval", time.Second, "interval of --stats-json lines")
	fl.IntVar(&sf.ReceiveMaximum, "receive-maximum", sink.DefaultReceiveMaximum, "5.0 CONNACK Receive Maximum (1-65535)")
	fl.IntVar(&sf.TopicAliasMaximum, "topic-alias-maximum", 16, "5.0 CONNACK Topic Alias Maximum (0-65535; 0: no aliases)")
	fl.StringVar(&sf.MaxPacketSize, "max-packet-size", "1MiB", "largest packet accepted, also the 5.0 CONNACK Maximum Packet Size")
	fl.StringVar(&sf.MaxOutput, "max-output", "1MiB", "unsent bytes per connection beyond which relayed copies are dropped (counted)")
	fl.StringVar(&sf.MaxHeld, "max-held", "64MiB", "bytes held per process for packets not yet whole; the connection whose cut packet passes it is closed (counted)")
	fl.DurationVar(&sf.FlushDelay, "flush-delay", 0, "shortest time between two writes of relayed copies to a subscriber: a copy waits at most this long, none after a quiet spell (0: at the end of the loop's round; at most 1s)")
	fl.IntVar(&sf.MaxConnections, "max-connections", 0, "refuse connections beyond this many per process (0: what the descriptor hard limit lets one process hold, less 64; at most that)")
	fl.StringVar(&sf.TLSCert, "tls-cert", "", "certificate chain (PEM, leaf first): with --tls-key the sink speaks MQTT over TLS 1.3 (mqtts) with the same relay")
	fl.StringVar(&sf.TLSKey, "tls-key", "", "private key of --tls-cert (PEM; read, never shown)")
	fl.StringVar(&sf.TLSClientCA, "tls-client-ca", "", "CA certificate(s) (PEM): require a client certificate signed by one of them; others are refused")
	fl.BoolVar(&sf.WS, "ws", false, "serve MQTT over WebSocket on the port instead of raw MQTT (ws://; with --tls-cert, wss://): the HTTP/1.1 upgrade, then binary frames")
	fl.StringVar(&sf.WSPath, "ws-path", sink.DefaultWSPath, "with --ws: the path the WebSocket upgrade is served on (others are answered 404)")
	fl.BoolVar(&sf.Child, "child", false, "internal: run as one process of a --procs parent")
	_ = fl.MarkHidden("child")
	fl.StringVar(&sf.Turn, "turn", "0/0/0", "internal: a child's turn among the processes, index/procs/fill")
	_ = fl.MarkHidden("turn")
	return cmd
}

// packetSize is a flag holding a packet size in bytes, given as bytesize.Parse reads it:
// 0 (the default it stands for) or 64 bytes to MQTT's largest packet.
type packetSize struct{ p *int }

func (v packetSize) String() string {
	if v.p == nil {
		return "0"
	}
	return strconv.Itoa(*v.p)
}

func (v packetSize) Set(s string) error {
	n, err := bytesize.Parse(s)
	if err != nil || (n != 0 && (n < 64 || n > sink.MaxPacket)) {
		return fmt.Errorf("want 0 or a size from 64 to 256MiB (bytes, or with a unit: %s), e.g. 1MiB", bytesize.Units)
	}
	*v.p = n
	return nil
}

func (packetSize) Type() string { return "size" }
