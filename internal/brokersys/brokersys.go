package brokersys

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mqblast/mqblast/codec"
	"github.com/mqblast/mqblast/internal/termtext"
)

// Topics of Mosquitto's $SYS tree (mochi-mqtt publishes some of them too).
const (
	TopicUptime         = "$SYS/broker/uptime"
	TopicVersion        = "$SYS/broker/version"
	TopicClientsConnect = "$SYS/broker/clients/connected"
	TopicMessagesRecv   = "$SYS/broker/messages/received"
	TopicMessagesSent   = "$SYS/broker/messages/sent"
	TopicPublishRecv    = "$SYS/broker/publish/messages/received"
	TopicPublishSent    = "$SYS/broker/publish/messages/sent"
	// TopicPublishDropped is what Mosquitto dropped by its own policy (a subscriber's queue
	// over max_queued_messages, an offline client's QoS 0).
	TopicPublishDropped  = "$SYS/broker/publish/messages/dropped"
	TopicBytesRecv       = "$SYS/broker/bytes/received"
	TopicBytesSent       = "$SYS/broker/bytes/sent"
	TopicLoadPrefix      = "$SYS/broker/load/"
	maxPacket            = 1 << 20
	defaultTimeout       = 5 * time.Second
	defaultKeepAlive     = 30 * time.Second
	settleQuiet          = 150 * time.Millisecond
	settleMax            = time.Second
	maxBackoff           = 5 * time.Second
	maxTopics            = 4096 // a broker's $SYS tree is tens of topics; more are not kept
	maxTextLen           = 256
	subscribePacketID    = 1
	defaultClientIDStart = "mqblast-sys-"
)

// Options say which broker to read and how to log in.
type Options struct {
	// Addr is the broker's host:port.
	Addr string
	// TLS, if set, wraps the connection (a broker given as mqtts://).
	TLS *tls.Config
	// Username and Password log in as the run does (Password is never printed).
	Username, Password string
	// Version is the MQTT version to speak (0: 3.1.1).
	Version codec.Version
	// ClientID is the reader's client identifier (default "mqblast-sys-PID").
	ClientID string
	// Timeout bounds the dial, CONNACK and SUBACK (default 5 s); KeepAlive the keep alive
	// (default 30 s).
	Timeout, KeepAlive time.Duration
}

// Value is the latest message of one $SYS topic.
type Value struct {
	// Num is the payload as a number, when Numeric: an integer, a float, or the N of "N
	// seconds".
	Num     float64
	Numeric bool
	// Text is the payload, escaped (termtext.Line) and cut to 256 bytes.
	Text string
	// At is when it arrived; Seq its place in the reader's stream (1: the first $SYS
	// message read since Start).
	At  time.Time
	Seq int64
	// Retained says the broker sent it because the reader subscribed (its retained
	// value, computed before the reader was there), not as a refresh.
	Retained bool
}

// Reading is what the reader has read so far.
type Reading struct {
	// Addr is the broker read.
	Addr string
	// Topics holds the latest value of every $SYS topic seen; the caller's to keep.
	Topics map[string]Value
	// Read counts the $SYS messages read; Latest is when the latest arrived, Refreshed
	// when the latest that was not a retained value arrived (zero: none yet).
	Read      int64
	Latest    time.Time
	Refreshed time.Time
	// Version is $SYS/broker/version's text, escaped ("" when not published).
	Version string
	// Refresh is the spacing of the broker's last two uptime messages: how often it
	// refreshes $SYS (0: not known yet).
	Refresh time.Duration
	// Connected says the reader is connected now; Gaps counts the times its connection
	// dropped mid-run; Err is the latest connection error, escaped ("" none).
	Connected bool
	Gaps      int
	Err       string
}

// Num returns topic's numeric value, if the broker published one.
func (r *Reading) Num(topic string) (float64, bool) {
	v, ok := r.Topics[topic]
	return v.Num, ok && v.Numeric
}

// Reader reads a broker's $SYS topics until Close. Its methods are safe for concurrent use.
type Reader struct {
	o      Options
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	cond     *sync.Cond // signalled on every message and at the end
	conn     net.Conn
	r        Reading
	upPrev   time.Time // the uptime message before the latest
	finished bool
}

// Start dials the broker, logs in, subscribes to $SYS/# at QoS 0 and reads what the broker
// sends at once (its retained $SYS values) before it returns; then it reads on in a
// goroutine of its own until ctx ends or Close. A broker that cannot be reached, refuses
// the login or the subscription, or does not answer within the timeout is an error.
func Start(ctx context.Context, o Options) (*Reader, error) {
	if o.Timeout <= 0 {
		o.Timeout = defaultTimeout
	}
	if o.KeepAlive <= 0 {
		o.KeepAlive = defaultKeepAlive
	}
	if o.Version == 0 {
		o.Version = codec.V311
	}
	if o.ClientID == "" {
		o.ClientID = defaultClientIDStart + strconv.Itoa(os.Getpid())
	}
	c, buf, err := dial(ctx, &o)
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(ctx)
	rd := &Reader{o: o, cancel: cancel, done: make(chan struct{}), conn: c}
	rd.cond = sync.NewCond(&rd.mu)
	rd.r = Reading{Addr: o.Addr, Topics: map[string]Value{}, Connected: true}
	if err := rd.handle(&buf); err != nil {
		_ = c.Close()
		cancel()
		return nil, err
	}
	settleEnd := time.Now().Add(settleMax)
	for time.Now().Before(settleEnd) { // the retained values, sent right after the SUBACK
		n, err := rd.readOnce(c, &buf, settleQuiet)
		if err != nil || n == 0 {
			break
		}
	}
	go rd.loop(rctx, buf)
	return rd, nil
}

// dial connects, logs in and subscribes, within o.Timeout, and returns the connection and
// the bytes read past the SUBACK; the password is never in its errors.
func dial(ctx context.Context, o *Options) (net.Conn, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", o.Addr)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot reach the broker at %s to read $SYS: %w", o.Addr, err)
	}
	if o.TLS != nil {
		tc := tls.Client(c, o.TLS)
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = c.Close()
			return nil, nil, fmt.Errorf("TLS handshake with %s for the $SYS reader: %s", o.Addr, termtext.Line(err.Error()))
		}
		c = tc
	}
	deadline, _ := ctx.Deadline()
	_ = c.SetDeadline(deadline)
	rest, err := login(c, o)
	if err != nil {
		_ = c.Close()
		return nil, nil, err
	}
	_ = c.SetDeadline(time.Time{})
	return c, rest, nil
}

// login sends CONNECT and SUBSCRIBE, waits for their acknowledgements, and returns what
// it read past the SUBACK.
func login(c net.Conn, o *Options) ([]byte, error) {
	cp := codec.Connect{ClientID: []byte(o.ClientID), CleanStart: true, KeepAlive: uint16(o.KeepAlive / time.Second)}
	if o.Username != "" {
		cp.HasUsername, cp.Username = true, []byte(o.Username)
		if o.Password != "" {
			cp.HasPassword, cp.Password = true, []byte(o.Password)
		}
	}
	out := codec.AppendConnect(nil, &cp, o.Version)
	out = codec.AppendSubscribe(out, &codec.Subscribe{ID: subscribePacketID,
		Filters: []codec.Subscription{{Filter: []byte("$SYS/#")}}}, o.Version)
	if _, err := c.Write(out); err != nil {
		return nil, fmt.Errorf("cannot log in to %s to read $SYS: %w", o.Addr, err)
	}
	var buf []byte
	tmp := make([]byte, 4096)
	connacked := false
	for {
		n, err := c.Read(tmp)
		if err != nil {
			what := "CONNACK"
			if connacked {
				what = "SUBACK"
			}
			return nil, fmt.Errorf("no %s from %s for the $SYS reader: %w", what, o.Addr, err)
		}
		buf = append(buf, tmp[:n]...)
		for {
			h, body, used, err := codec.Split(buf, maxPacket)
			if err != nil {
				return nil, fmt.Errorf("the broker at %s sent a malformed packet to the $SYS reader: %w", o.Addr, err)
			}
			if used == 0 {
				break
			}
			switch h.Type {
			case codec.TypeConnack:
				var ca codec.Connack
				if err := codec.DecodeConnack(body, o.Version, &ca); err != nil {
					return nil, fmt.Errorf("the broker at %s sent a malformed CONNACK to the $SYS reader: %w", o.Addr, err)
				}
				if ca.Reason != 0 {
					return nil, fmt.Errorf("the broker at %s refused the $SYS reader's login: reason code 0x%02x (%s)",
						o.Addr, byte(ca.Reason), loginHint(o))
				}
				connacked = true
			case codec.TypeSuback:
				var sa codec.Suback
				if err := codec.DecodeSuback(body, o.Version, &sa); err != nil {
					return nil, fmt.Errorf("the broker at %s sent a malformed SUBACK to the $SYS reader: %w", o.Addr, err)
				}
				if len(sa.Reasons) != 1 || sa.Reasons[0].IsError() {
					return nil, fmt.Errorf("the broker at %s refused the $SYS reader's subscription to $SYS/# "+
						"(its ACL may deny $SYS to this user): leave out --broker-sys or allow it", o.Addr)
				}
				return append([]byte(nil), buf[used:]...), nil
			}
			buf = buf[used:]
		}
	}
}

func loginHint(o *Options) string {
	if o.Username == "" {
		return "does it want a username? give the run's -u and password"
	}
	return "check the run's username and password"
}

// readOnce reads what arrives within wait and handles every complete packet; it returns
// how many bytes it read.
func (rd *Reader) readOnce(c net.Conn, buf *[]byte, wait time.Duration) (int, error) {
	_ = c.SetReadDeadline(time.Now().Add(wait))
	tmp := make([]byte, 16<<10)
	n, err := c.Read(tmp)
	if n > 0 {
		*buf = append(*buf, tmp[:n]...)
		if perr := rd.handle(buf); perr != nil {
			return n, perr
		}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return n, nil
	}
	return n, err
}

// handle decodes the complete packets at the start of buf and keeps the cut tail.
func (rd *Reader) handle(buf *[]byte) error {
	b := *buf
	for {
		h, body, used, err := codec.Split(b, maxPacket)
		if err != nil {
			return fmt.Errorf("the broker at %s sent a malformed packet to the $SYS reader: %w", rd.o.Addr, err)
		}
		if used == 0 {
			break
		}
		if h.Type == codec.TypePublish {
			var p codec.Publish
			if err := codec.DecodePublish(h, body, rd.o.Version, &p); err != nil {
				return fmt.Errorf("the broker at %s sent a malformed PUBLISH to the $SYS reader: %w", rd.o.Addr, err)
			}
			rd.record(p.Topic, p.Payload, p.Retain, time.Now())
		}
		b = b[used:]
	}
	*buf = append((*buf)[:0], b...)
	return nil
}

// record keeps one $SYS message.
func (rd *Reader) record(topic, payload []byte, retained bool, at time.Time) {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	r := &rd.r
	r.Read++
	r.Latest = at
	if !retained {
		r.Refreshed = at
	}
	t := string(topic)
	if _, ok := r.Topics[t]; !ok && len(r.Topics) >= maxTopics {
		rd.cond.Broadcast()
		return
	}
	num, numeric := Parse(payload)
	text := payload
	if len(text) > maxTextLen {
		text = text[:maxTextLen]
	}
	r.Topics[t] = Value{Num: num, Numeric: numeric, Text: termtext.Line(string(text)), At: at, Seq: r.Read, Retained: retained}
	switch t {
	case TopicVersion:
		r.Version = termtext.Line(string(text))
	case TopicUptime:
		if !rd.upPrev.IsZero() {
			r.Refresh = at.Sub(rd.upPrev)
		}
		rd.upPrev = at
	}
	rd.cond.Broadcast()
}

// Parse reads a $SYS payload as a number: an integer, a float, or "N seconds" (Mosquitto's
// uptime).
func Parse(payload []byte) (float64, bool) {
	s := string(bytes.TrimSpace(payload))
	s = strings.TrimSuffix(s, " seconds")
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return float64(i), true
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return f, true
	}
	return 0, false
}

// loop reads until ctx ends, pinging when the line is quiet, and reconnects with backoff
// when the connection drops.
func (rd *Reader) loop(ctx context.Context, buf []byte) {
	defer close(rd.done)
	defer func() {
		rd.mu.Lock()
		rd.finished, rd.r.Connected = true, false
		if rd.conn != nil {
			_ = rd.conn.SetWriteDeadline(time.Now().Add(time.Second)) // a broker that does not read
			_, _ = rd.conn.Write(codec.AppendDisconnect(nil, &codec.Disconnect{}, rd.o.Version))
			_ = rd.conn.Close()
		}
		rd.cond.Broadcast()
		rd.mu.Unlock()
	}()
	stop := context.AfterFunc(ctx, func() { // wake a blocked read
		rd.mu.Lock()
		if rd.conn != nil {
			_ = rd.conn.SetReadDeadline(time.Now())
		}
		rd.mu.Unlock()
	})
	defer stop()
	backoff := 100 * time.Millisecond
	lastPing := time.Now()
	for ctx.Err() == nil {
		rd.mu.Lock()
		c := rd.conn
		rd.mu.Unlock()
		if c == nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, maxBackoff)
			nc, rest, err := dial(ctx, &rd.o)
			buf = rest
			rd.mu.Lock()
			if err != nil {
				rd.r.Err = termtext.Line(err.Error())
			} else {
				rd.conn, rd.r.Connected, rd.r.Err = nc, true, ""
				backoff = 100 * time.Millisecond
				if len(buf) > 0 {
					rd.mu.Unlock()
					_ = rd.handle(&buf)
					rd.mu.Lock()
				}
			}
			rd.mu.Unlock()
			continue
		}
		if time.Since(lastPing) >= rd.o.KeepAlive/2 {
			_ = c.SetWriteDeadline(time.Now().Add(rd.o.Timeout))
			_, _ = c.Write(codec.AppendPingreq(nil))
			lastPing = time.Now()
		}
		_, err := rd.readOnce(c, &buf, rd.o.KeepAlive/2)
		if err != nil && ctx.Err() == nil {
			rd.mu.Lock()
			_ = c.Close()
			rd.conn, rd.r.Connected = nil, false
			rd.r.Gaps++
			rd.r.Err = termtext.Line(err.Error())
			rd.mu.Unlock()
			buf = buf[:0]
		}
	}
}

// Snapshot returns what has been read so far, without waiting.
func (rd *Reader) Snapshot() Reading {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	r := rd.r
	r.Topics = maps.Clone(rd.r.Topics)
	return r
}

// WaitRefresh waits, up to limit, for the broker's first $SYS refresh that arrives after
// `after` (an uptime message, or any message from a broker without one, that is not a
// retained value sent because the reader subscribed), then for the refresh to end (no
// message for 150 ms), and returns the reading. It returns at once when the reader has
// read nothing at all, and early when the reader ends.
func (rd *Reader) WaitRefresh(after time.Time, limit time.Duration) Reading {
	end := time.Now().Add(limit)
	t := time.AfterFunc(limit, func() {
		rd.mu.Lock()
		rd.cond.Broadcast()
		rd.mu.Unlock()
	})
	defer t.Stop()
	rd.mu.Lock()
	fresh := func() bool {
		if v, ok := rd.r.Topics[TopicUptime]; ok {
			return !v.Retained && v.At.After(after)
		}
		return rd.r.Refreshed.After(after)
	}
	for rd.r.Read > 0 && !fresh() && !rd.finished && time.Now().Before(end) {
		rd.cond.Wait()
	}
	rd.mu.Unlock()
	for { // the rest of the refresh
		rd.mu.Lock()
		quiet := time.Since(rd.r.Latest)
		done := rd.finished || rd.r.Read == 0
		rd.mu.Unlock()
		if done || quiet >= settleQuiet || time.Now().After(end) {
			break
		}
		time.Sleep(settleQuiet - quiet)
	}
	return rd.Snapshot()
}

// Close disconnects the reader and waits for its goroutine to end.
func (rd *Reader) Close() {
	rd.cancel()
	<-rd.done
}
