package tlsrec

import (
	"crypto/cipher"
	"crypto/tls"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Side is the end of the connection a Conn speaks for.
type Side uint8

const (
	Client Side = iota // writes with the client's traffic secret, reads with the server's
	Server             // writes with the server's traffic secret, reads with the client's
)

// Record layer sizes (RFC 8446 section 5).
const (
	headerLen     = 5            // content type, legacy version, length
	tagLen        = 16           // every suite's AEAD tag
	maxPlain      = 1 << 14      // application data per record
	maxCiphertext = 1<<14 + 256  // a record's length field
	maxInner      = maxPlain + 1 // content and its type byte, padding excluded
	recordOver    = headerLen + 1 + tagLen
	keyUpdateLen  = 4 + 1 // a KeyUpdate message: header and request_update
	keyUpdateRec  = keyUpdateLen + recordOver
	alertRec      = 2 + recordOver
)

// Content types (RFC 8446 section 5.1) and post-handshake message types (section 4).
const (
	typeCCS       = 20
	typeAlert     = 21
	typeHandshake = 22
	typeAppData   = 23

	msgNewSessionTicket = 4
	msgKeyUpdate        = 24
)

// maxKeyUpdateRun bounds the KeyUpdates received without application data between
// them. A peer that honestly updates its keys sends one per request of ours or one per
// ~2^24 records of its own (the AES-GCM limit of RFC 8446 section 5.5), so a run of 32
// is far past any honest pattern; each costs a key derivation and a cipher rebuild, so
// the bound caps what a hostile peer can make one record of data cost.
const maxKeyUpdateRun = 32

// keyUpdateAfter is the number of records sealed under one write key after which Seal
// updates the key itself (RFC 8446 section 5.5: AES-GCM may protect at most 2^24.5
// full-size records per key; the same bound serves ChaCha20-Poly1305, whose limit is
// higher).
const keyUpdateAfter = 1 << 24

// maxTicket is the longest NewSessionTicket body RFC 8446 section 4.6.1 allows:
// lifetime 4, age_add 4, nonce 1+255, ticket 2+65535, extensions 2+65534 bytes.
const maxTicket = 4 + 4 + 1 + 255 + 2 + 65535 + 2 + 65534

// Conn is one TLS 1.3 connection's record layer after the handshake, both directions.
// It is not safe for concurrent use. Its zero value is not usable; New makes one.
type Conn struct {
	st *cipherState // nil after Release until the next Seal, Open or Pending

	rd, wr       half   // read and write keys
	rdSeq, wrSeq uint64 // the next record's sequence number in each direction

	tickets, kuIn, kuOut uint32

	hsSkip  uint32  // bytes of a NewSessionTicket's body still to skip
	hsHdr   [4]byte // a post-handshake message's header, as far as it came
	hsHave  uint8   // bytes of hsHdr filled
	kuRun   uint8   // KeyUpdates received since the last application data
	owe     bool    // the peer asked for a KeyUpdate we have not sent yet
	errCode uint8   // the reason that ended the connection, 0 while it lives
	errDesc uint8   // the alert's description (ReasonAlert)
	side    Side
	suite   uint16
}

// cipherState is what Release drops: the AEAD objects and the nonce they are called with
// (a field, not a local, so that passing it through the AEAD interface does not allocate).
type cipherState struct {
	rd, wr cipher.AEAD
	nonce  [12]byte
}

// New copies the application traffic secrets (CLIENT_TRAFFIC_SECRET_0 and
// SERVER_TRAFFIC_SECRET_0, as crypto/tls's KeyLogWriter gives them) and derives the keys
// of both directions; sequence numbers start at 0, so nothing may have been sent under
// these secrets before (a server must not have sent a NewSessionTicket itself).
func New(suite uint16, side Side, clientSecret, serverSecret []byte) (*Conn, error) {
	if !Supported(suite) {
		return nil, errSuite
	}
	hashLen, _ := suiteSizes(suite)
	if len(clientSecret) != hashLen || len(serverSecret) != hashLen {
		return nil, errSecret
	}
	c := &Conn{suite: suite, side: side}
	wr, rd := clientSecret, serverSecret
	if side == Server {
		wr, rd = rd, wr
	}
	c.wr.setSecret(suite, wr)
	c.rd.setSecret(suite, rd)
	return c, nil
}

// state returns the cipher state, built from the keys when Release dropped it.
func (c *Conn) state() *cipherState {
	if c.st == nil {
		c.st = &cipherState{rd: c.rd.aead(c.suite), wr: c.wr.aead(c.suite)}
	}
	return c.st
}

// Release drops the cipher state (the AEAD objects); the next Seal, Open or Pending
// rebuilds it from the keys kept. What an idle connection keeps is the Conn without its
// cipher state.
func (c *Conn) Release() { c.st = nil }

// Seal appends plain to dst as application_data records (at most 2^14 bytes of plaintext
// each, no padding); an empty plain appends nothing. A KeyUpdate the Conn owes the peer
// (see Pending) goes first, and when the write key has sealed 2^24 records Seal updates it
// (a KeyUpdate record before the data). plain must not overlap dst's spare capacity.
// 0 allocations once the cipher state is built and dst has room.
func (c *Conn) Seal(dst, plain []byte) []byte {
	if len(plain) == 0 && !c.owe {
		return dst
	}
	c.state()
	if c.owe {
		dst = c.sealKeyUpdate(dst, false)
	}
	records := (len(plain) + maxPlain - 1) / maxPlain
	dst = slices.Grow(dst, len(plain)+records*recordOver)
	for len(plain) > 0 {
		if c.wrSeq >= keyUpdateAfter {
			dst = c.sealKeyUpdate(dst, false)
		}
		chunk := plain[:min(len(plain), maxPlain)]
		plain = plain[len(chunk):]
		dst = c.sealRecord(dst, typeAppData, chunk)
	}
	return dst
}

// sealRecord appends one record of content type typ; the cipher state must be built.
func (c *Conn) sealRecord(dst []byte, typ byte, content []byte) []byte {
	return c.sealPadded(dst, typ, content, 0)
}

// sealPadded is sealRecord with pad zero bytes after the content type (RFC 8446 section
// 5.4). The Conn never pads; tests do, as a peer may.
func (c *Conn) sealPadded(dst []byte, typ byte, content []byte, pad int) []byte {
	l := len(content) + 1 + pad + tagLen
	dst = slices.Grow(dst, headerLen+l)
	start := len(dst)
	dst = append(dst, typeAppData, 3, 3, byte(l>>8), byte(l))
	dst = append(dst, content...)
	dst = append(dst, typ)
	for range pad {
		dst = append(dst, 0)
	}
	body := dst[start+headerLen:]
	st := c.st
	c.wr.nonce(&st.nonce, c.wrSeq)
	sealed := st.wr.Seal(body[:0], st.nonce[:], body, dst[start:start+headerLen])
	c.wrSeq++
	return dst[:start+headerLen+len(sealed)]
}

// sealKeyUpdate appends our KeyUpdate under the current write key, then moves the write
// key to the next generation.
func (c *Conn) sealKeyUpdate(dst []byte, requestPeer bool) []byte {
	msg := [keyUpdateLen]byte{msgKeyUpdate, 0, 0, 1, 0}
	if requestPeer {
		msg[4] = 1
	}
	dst = c.sealRecord(dst, typeHandshake, msg[:])
	c.wr.next(c.suite)
	c.wrSeq = 0
	c.st.wr = c.wr.aead(c.suite)
	c.kuOut++
	c.owe = false
	return dst
}

// Pending appends to dst the records the Conn itself must send (the KeyUpdate a peer's
// update_requested asked for) and forgets them. Seal sends them too, before its data, so
// a caller that seals something after each Open need not call Pending; one that may stay
// silent calls it after Open. The write key moves to the next generation once they are
// appended, so they must reach the wire before anything sealed after this call.
func (c *Conn) Pending(dst []byte) []byte {
	if !c.owe {
		return dst
	}
	c.state()
	return c.sealKeyUpdate(dst, false)
}

// KeyUpdate appends our own KeyUpdate (asking the peer to update its keys too when
// requestPeer) and moves the write key to the next generation.
func (c *Conn) KeyUpdate(dst []byte, requestPeer bool) []byte {
	c.state()
	return c.sealKeyUpdate(dst, requestPeer)
}

// CloseNotify appends a close_notify alert: the last record the Conn should send.
func (c *Conn) CloseNotify(dst []byte) []byte {
	c.state()
	alert := [2]byte{1, 0} // level warning, close_notify (RFC 8446 section 6.1)
	return c.sealRecord(dst, typeAlert, alert[:])
}

// Open decrypts the whole records at the start of in, appends their application data to
// dst (returned as out) and returns n, the bytes of in consumed; a partial record at the
// end is not consumed (the caller keeps in[n:] and calls again with more). Post-handshake
// handshake messages are handled here: NewSessionTicket counted and dropped; KeyUpdate
// applied and, when the peer asked for one, our own KeyUpdate queued (Pending). An alert or
// a protocol violation ends the connection: err is *Error; out and n still cover what was
// good before it (n stops at the start of the record that ended it), and every later Open
// returns the same error. in is not modified, and dst's spare capacity must not overlap it
// (no decrypting in place). 0 allocations once the cipher state is built and dst has room.
func (c *Conn) Open(dst, in []byte) (out []byte, n int, err error) {
	if c.errCode != 0 {
		return dst, 0, c.err()
	}
	for {
		rec := in[n:]
		if len(rec) < headerLen {
			return dst, n, nil
		}
		// Judge the header before waiting for the body: a record that can never be
		// valid is refused as soon as its five bytes are in.
		if rec[0] != typeAppData {
			return dst, n, c.fail(codeUnexpected, 0)
		}
		l := int(rec[3])<<8 | int(rec[4])
		if l > maxCiphertext {
			return dst, n, c.fail(codeOverflow, 0)
		}
		if len(rec) < headerLen+l {
			return dst, n, nil
		}
		if l < 1+tagLen {
			return dst, n, c.fail(codeBadMAC, 0)
		}
		st := c.state()
		c.rd.nonce(&st.nonce, c.rdSeq)
		base := len(dst)
		full, e := st.rd.Open(dst, st.nonce[:], rec[headerLen:headerLen+l], rec[:headerLen])
		if e != nil {
			return dst, n, c.fail(codeBadMAC, 0)
		}
		dst = full[:base]
		c.rdSeq++
		if len(full)-base > maxInner {
			return dst, n, c.fail(codeOverflow, 0)
		}
		i := len(full) - 1
		for i >= base && full[i] == 0 {
			i--
		}
		if i < base { // all padding, no content type
			return dst, n, c.fail(codeUnexpected, 0)
		}
		content := full[base:i]
		switch full[i] {
		case typeAppData:
			if c.hsHave != 0 || c.hsSkip != 0 { // a handshake message cut by other records
				return dst, n, c.fail(codeUnexpected, 0)
			}
			if len(content) > 0 {
				c.kuRun = 0
			}
			dst = full[:i]
		case typeHandshake:
			if len(content) == 0 {
				return dst, n, c.fail(codeUnexpected, 0)
			}
			if code := c.handshake(content); code != 0 {
				return dst, n, c.fail(code, 0)
			}
		case typeAlert:
			if len(content) != 2 {
				return dst, n, c.fail(codeDecode, 0)
			}
			switch desc := content[1]; desc {
			case 0: // close_notify
				return dst, n, c.fail(codeClosed, 0)
			case 90: // user_canceled: a close_notify follows (crypto/tls ignores it too)
			default:
				return dst, n, c.fail(codeAlert, desc)
			}
		default:
			return dst, n, c.fail(codeUnexpected, 0)
		}
		n += headerLen + l
	}
}

// handshake consumes the post-handshake messages in one record's content. It returns a
// reason code, 0 when all is well. A message may span records; only its header is kept
// between records (a NewSessionTicket's body is skipped, a KeyUpdate's one byte read).
func (c *Conn) handshake(p []byte) uint8 {
	for len(p) > 0 {
		if c.hsSkip > 0 {
			k := min(uint32(len(p)), c.hsSkip)
			p = p[k:]
			c.hsSkip -= k
			if c.hsSkip == 0 {
				c.tickets++
			}
			continue
		}
		if c.hsHave < 4 {
			k := copy(c.hsHdr[c.hsHave:], p)
			c.hsHave += uint8(k)
			p = p[k:]
			if c.hsHave < 4 {
				return 0
			}
		}
		length := uint32(c.hsHdr[1])<<16 | uint32(c.hsHdr[2])<<8 | uint32(c.hsHdr[3])
		switch c.hsHdr[0] {
		case msgNewSessionTicket:
			if length < 4+4+1+2+1+2 || length > maxTicket {
				return codeDecode
			}
			c.hsHave = 0
			c.hsSkip = length
		case msgKeyUpdate:
			if length != 1 {
				return codeDecode
			}
			if len(p) == 0 {
				return 0 // its byte comes in the next record
			}
			req := p[0]
			p = p[1:]
			c.hsHave = 0
			if req > 1 {
				return codeDecode
			}
			// A key change must end its record (RFC 8446 section 5.1).
			if len(p) != 0 {
				return codeUnexpected
			}
			c.kuIn++
			c.kuRun++
			if c.kuRun > maxKeyUpdateRun {
				return codeStorm
			}
			c.rd.next(c.suite)
			c.rdSeq = 0
			c.st.rd = c.rd.aead(c.suite)
			if req == 1 {
				c.owe = true
			}
		default:
			return codeUnexpected
		}
	}
	return 0
}

// Stats counts what Open saw and Seal sent besides application data.
type Stats struct {
	Tickets       uint64 // NewSessionTickets received (and dropped)
	KeyUpdatesIn  uint64 // KeyUpdates received and applied
	KeyUpdatesOut uint64 // KeyUpdates sent: answers, Seal's own after 2^24 records, KeyUpdate
}

// Stats returns the counts so far.
func (c *Conn) Stats() Stats {
	return Stats{Tickets: uint64(c.tickets), KeyUpdatesIn: uint64(c.kuIn), KeyUpdatesOut: uint64(c.kuOut)}
}

// Error ends a connection; Reason is one of the Reason* constants, Alert the alert's
// description (ReasonAlert) as crypto/tls names it (e.g. "bad certificate").
type Error struct {
	Reason string
	Alert  string
}

const (
	ReasonClosed         = "close_notify"       // the peer closed cleanly
	ReasonAlert          = "alert"              // the peer sent another alert
	ReasonOverflow       = "record_overflow"    // a record over 2^14+256 bytes, or plaintext over 2^14
	ReasonBadMAC         = "bad_record_mac"     // a record failed to authenticate
	ReasonUnexpected     = "unexpected_message" // e.g. a handshake message other than NewSessionTicket/KeyUpdate, a CCS
	ReasonDecode         = "decode_error"       // a malformed message
	ReasonKeyUpdateStorm = "key_update_storm"   // KeyUpdates without application data past a bound
)

// Reason codes as a Conn keeps them (a byte, not a string).
const (
	codeNone uint8 = iota
	codeClosed
	codeAlert
	codeOverflow
	codeBadMAC
	codeUnexpected
	codeDecode
	codeStorm
)

var reasons = [...]string{
	codeClosed:     ReasonClosed,
	codeAlert:      ReasonAlert,
	codeOverflow:   ReasonOverflow,
	codeBadMAC:     ReasonBadMAC,
	codeUnexpected: ReasonUnexpected,
	codeDecode:     ReasonDecode,
	codeStorm:      ReasonKeyUpdateStorm,
}

func (e *Error) Error() string {
	if e.Reason == ReasonAlert {
		return "tlsrec: the peer sent alert " + e.Alert
	}
	return "tlsrec: " + e.Reason
}

// fail ends the connection with the reason code and returns its error.
func (c *Conn) fail(code, desc uint8) error {
	c.errCode, c.errDesc = code, desc
	return c.err()
}

func (c *Conn) err() error {
	e := &Error{Reason: reasons[c.errCode]}
	if c.errCode == codeAlert {
		e.Alert = strings.TrimPrefix(tls.AlertError(c.errDesc).Error(), "tls: ")
	}
	return e
}

// Format prints a Conn without its keys, whatever the verb.
func (c *Conn) Format(f fmt.State, _ rune) {
	_, _ = io.WriteString(f, "tlsrec.Conn")
}
