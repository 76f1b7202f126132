// TEMPORARY stub (not committed): the agreed API, AES-GCM only, until branch tlsrec lands.
package tlsrec

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/binary"
	"errors"
	"hash"
)

func Supported(suite uint16) bool { return suite == 0x1301 || suite == 0x1302 }

type Side uint8

const (
	Client Side = iota
	Server
)

type dir struct {
	aead cipher.AEAD
	iv   [12]byte
	seq  uint64
}

type Conn struct {
	in, out dir
	st      Stats
}

type Stats struct{ Tickets, KeyUpdatesIn, KeyUpdatesOut uint64 }

type Error struct{ Reason, Alert string }

const (
	ReasonClosed         = "close_notify"
	ReasonAlert          = "alert"
	ReasonOverflow       = "record_overflow"
	ReasonBadMAC         = "bad_record_mac"
	ReasonUnexpected     = "unexpected_message"
	ReasonDecode         = "decode_error"
	ReasonKeyUpdateStorm = "key_update_storm"
)

func (e *Error) Error() string { return "tls: " + e.Reason + " " + e.Alert }

func label(h func() hash.Hash, secret []byte, l string, n int) []byte {
	k, err := hkdf.Expand(h, secret, string(append(append([]byte{byte(n >> 8), byte(n), byte(6 + len(l))}, "tls13 "+l...), 0)), n)
	if err != nil {
		panic(err)
	}
	return k
}

func mk(suite uint16, secret []byte) (dir, error) {
	h, kl := sha256.New, 16
	if suite == 0x1302 {
		h, kl = sha512.New384, 32
	}
	b, err := aes.NewCipher(label(h, secret, "key", kl))
	if err != nil {
		return dir{}, err
	}
	g, _ := cipher.NewGCM(b)
	d := dir{aead: g}
	copy(d.iv[:], label(h, secret, "iv", 12))
	return d, nil
}

func New(suite uint16, side Side, clientSecret, serverSecret []byte) (*Conn, error) {
	if !Supported(suite) {
		return nil, errors.New("unsupported")
	}
	c := &Conn{}
	var err error
	rs, ws := clientSecret, serverSecret
	if side == Client {
		rs, ws = serverSecret, clientSecret
	}
	if c.in, err = mk(suite, rs); err != nil {
		return nil, err
	}
	c.out, err = mk(suite, ws)
	return c, err
}

func (d *dir) nonce() []byte {
	var n [12]byte
	n = d.iv
	var s [8]byte
	binary.BigEndian.PutUint64(s[:], d.seq)
	for i := range 8 {
		n[4+i] ^= s[i]
	}
	d.seq++
	return n[:]
}

func (c *Conn) Seal(dst, plain []byte) []byte {
	for {
		n := min(len(plain), 1<<14)
		l := n + 1 + 16
		hdr := []byte{23, 3, 3, byte(l >> 8), byte(l)}
		dst = append(dst, hdr...)
		start := len(dst)
		dst = append(dst, plain[:n]...)
		dst = append(dst, 23)
		p := dst[start:]
		dst = c.out.aead.Seal(dst[:start], c.out.nonce(), p, hdr)
		plain = plain[n:]
		if len(plain) == 0 {
			return dst
		}
	}
}

func (c *Conn) Open(dst, in []byte) ([]byte, int, error) {
	n := 0
	var buf []byte
	for len(in)-n >= 5 {
		l := int(binary.BigEndian.Uint16(in[n+3:]))
		if l > 1<<14+256 {
			return dst, n, &Error{Reason: ReasonOverflow}
		}
		if len(in)-n < 5+l {
			break
		}
		if in[n] != 23 {
			return dst, n, &Error{Reason: ReasonUnexpected}
		}
		pt, err := c.in.aead.Open(buf[:0], c.in.nonce(), in[n+5:n+5+l], in[n:n+5])
		if err != nil {
			return dst, n, &Error{Reason: ReasonBadMAC}
		}
		buf = pt
		i := len(pt) - 1
		for i >= 0 && pt[i] == 0 {
			i--
		}
		if i < 0 {
			return dst, n, &Error{Reason: ReasonUnexpected}
		}
		n += 5 + l
		switch pt[i] {
		case 23:
			dst = append(dst, pt[:i]...)
		case 21:
			if i >= 2 && pt[1] == 0 {
				return dst, n, &Error{Reason: ReasonClosed}
			}
			return dst, n, &Error{Reason: ReasonAlert, Alert: "alert"}
		case 22:
			if i > 0 && pt[0] == 4 {
				c.st.Tickets++
				continue
			}
			return dst, n, &Error{Reason: ReasonUnexpected}
		default:
			return dst, n, &Error{Reason: ReasonUnexpected}
		}
	}
	return dst, n, nil
}

func (c *Conn) Pending(dst []byte) []byte { return dst }
func (c *Conn) Release()                  {}
func (c *Conn) Stats() Stats              { return c.st }
