package sink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/mqblast/mqblast/codec"
	"github.com/mqblast/mqblast/internal/bytesize"
	"github.com/mqblast/mqblast/internal/fail"
)

// Flags are the settings of `mqblast sink` as its command line gives them (sizes as text,
// bytesize's); a parent of several processes passes them on to its children (Args).
type Flags struct {
	Listen            string
	AllowRemote       bool
	Procs             string // a number, or auto
	Connections       int
	StatsJSON         bool
	Interval          time.Duration
	ReceiveMaximum    int
	TopicAliasMaximum int
	MaxPacketSize     string
	MaxOutput         string
	MaxHeld           string
	FlushDelay        time.Duration
	MaxConnections    int
	TLSCert           string // the sink's certificate chain (PEM); with TLSKey, MQTT over TLS
	TLSKey            string // its private key (PEM); the file is read, its content never shown
	TLSClientCA       string // CAs a client certificate must be signed by; a client without one is refused
	WS                bool   // MQTT over WebSocket (with TLSCert: wss)
	WSPath            string // the WebSocket upgrade's path
	Child             bool   // one process of a parent's
	Turn              string // a child's Turn
}

// MaxPacket is the largest MQTT packet: a remaining length of 268,435,455 bytes and the
// five bytes of its fixed header.
const MaxPacket = codec.MaxRemainingLength + 5

// Config checks the flags, each problem named by its flag, and builds the sink's
// configuration.
func (f *Flags) Config() (Config, error) {
	cfg := Config{Addr: f.Listen, AllowRemote: f.AllowRemote, FlushDelay: f.FlushDelay, MaxConnections: f.MaxConnections, WS: f.WS, WSPath: f.WSPath}
	if err := CheckAddr(f.Listen, f.AllowRemote); err != nil {
		if errors.Is(err, ErrNotLoopback) {
			return cfg, fmt.Errorf("--listen %s is not a loopback address: the sink is an instrument without authentication; pass --allow-remote to listen there anyway", f.Listen)
		}
		return cfg, fmt.Errorf("--listen: %w", err)
	}
	if f.ReceiveMaximum < 1 || f.ReceiveMaximum > 65535 {
		return cfg, fmt.Errorf("--receive-maximum %d: want 1 to 65535", f.ReceiveMaximum)
	}
	if f.TopicAliasMaximum < 0 || f.TopicAliasMaximum > 65535 {
		return cfg, fmt.Errorf("--topic-alias-maximum %d: want 0 to 65535", f.TopicAliasMaximum)
	}
	cfg.ReceiveMaximum, cfg.TopicAliasMaximum = uint16(f.ReceiveMaximum), uint16(f.TopicAliasMaximum)
	var err error
	if cfg.MaxPacketSize, err = bytesize.Parse(f.MaxPacketSize); err != nil || cfg.MaxPacketSize < 64 || cfg.MaxPacketSize > MaxPacket {
		return cfg, fmt.Errorf("--max-packet-size %q: want a size from 64 to 256MiB (bytes, or with a unit: %s), e.g. 1MiB", f.MaxPacketSize, bytesize.Units)
	}
	if cfg.MaxOutput, err = bytesize.Parse(f.MaxOutput); err != nil || cfg.MaxOutput < 1024 {
		return cfg, fmt.Errorf("--max-output %q: want a size of at least 1KiB (bytes, or with a unit: %s), e.g. 1MiB", f.MaxOutput, bytesize.Units)
	}
	if cfg.MaxHeld, err = bytesize.Parse(f.MaxHeld); err != nil || cfg.MaxHeld < cfg.MaxPacketSize {
		return cfg, fmt.Errorf("--max-held %q: want a size of at least --max-packet-size (%s; bytes, or with a unit: %s), e.g. 64MiB",
			f.MaxHeld, f.MaxPacketSize, bytesize.Units)
	}
	if f.Interval <= 0 {
		return cfg, fmt.Errorf("--interval %v: want a positive duration, e.g. 1s", f.Interval)
	}
	if err := CheckFlushDelay("--flush-delay", f.FlushDelay); err != nil {
		return cfg, err
	}
	if cfg.TLS, err = LoadTLS(f.TLSCert, f.TLSKey, f.TLSClientCA); err != nil {
		return cfg, err
	}
	if err := CheckWSPath(f.WS, f.WSPath); err != nil {
		return cfg, err
	}
	if cfg.Turn, err = ParseTurn(f.Turn); err != nil {
		return cfg, fmt.Errorf("--turn: %w", err)
	}
	return cfg, CheckMaxConnections(f.MaxConnections)
}

// args are the arguments of `mqblast` that run one of f's processes listening on listen,
// with its turn.
func (f *Flags) args(listen string, turn Turn) []string {
	return []string{"sink", "--child", "--turn", turn.String(), "--listen", listen, "--allow-remote=" + strconv.FormatBool(f.AllowRemote),
		"--interval", f.Interval.String(), "--receive-maximum", strconv.Itoa(f.ReceiveMaximum),
		"--topic-alias-maximum", strconv.Itoa(f.TopicAliasMaximum), "--max-packet-size", f.MaxPacketSize,
		"--max-output", f.MaxOutput, "--max-held", f.MaxHeld, "--flush-delay", f.FlushDelay.String(),
		"--max-connections", strconv.Itoa(f.MaxConnections),
		"--tls-cert", f.TLSCert, "--tls-key", f.TLSKey, "--tls-client-ca", f.TLSClientCA,
		"--ws=" + strconv.FormatBool(f.WS), "--ws-path", f.WSPath}
}

// Main is `mqblast sink`: it checks f (a problem is of kind fail.ErrUsage and names the
// flag) and runs the sink until ctx ends (Run).
func Main(ctx context.Context, f *Flags, stdout, stderr io.Writer) error {
	cfg, err := f.Config()
	if err == nil {
		var procs int
		if procs, err = ParseProcs(f.Procs, f.Connections); err == nil {
			return Run(ctx, cfg, RunOptions{Procs: procs, Child: f.Child, StatsJSON: f.StatsJSON, Interval: f.Interval,
				Stdout: stdout, Stderr: stderr, Connections: f.Connections, ChildArgs: f.args})
		}
	}
	return fail.Mark(fail.ErrUsage, err)
}
