package tlsrec

import (
	"bytes"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"testing"
)

// The application phase of RFC 8448 section 3 ("Simple 1-RTT Handshake", TLS_AES_128_GCM_SHA256):
// its secrets, keys, IVs and records as the RFC prints them. The records authenticate only
// under the right keys, so a wrong byte here fails the test rather than passing it.
var (
	// {server} derive secret "tls13 c ap traffic" / "tls13 s ap traffic".
	rfc8448ClientSecret = unhex("9e 40 64 6c e7 9a 7f 9d c0 5a f8 88 9b ce 65 52 87 5a fa 0b 06 df 00 87 f7 92 eb b7 c1 75 04 a5")
	rfc8448ServerSecret = unhex("a1 1a f9 f0 55 31 f8 56 ad 47 11 6b 45 a9 50 32 82 04 b4 f4 4b fb 6b 3a 4b 4f 1f 3f cb 63 16 43")
	// {server} derive write traffic keys for application data.
	rfc8448ServerKey = unhex("9f 02 28 3b 6c 9c 07 ef c2 6b b9 f2 ac 92 e3 56")
	rfc8448ServerIV  = unhex("cf 78 2b 88 dd 83 54 9a ad f1 e9 84")
	// {client} derive write traffic keys for application data.
	rfc8448ClientKey = unhex("17 42 2d da 59 6e d5 d9 ac d8 90 e3 c6 3f 50 51")
	rfc8448ClientIV  = unhex("5b 78 92 3d ee 08 57 90 33 e5 23 d9")
	// {server} send handshake record: the NewSessionTicket, server seq 0.
	rfc8448TicketRecord = unhex(`17 03 03 00 de 3a 6b 8f 90 41 4a 97 d6 95 9c 34 87 68 0d e5 13 4a 2b 24
		0e 6c ff ac 11 6e 95 d4 1d 6a f8 f6 b5 80 dc f3 d1 1d 63 c7 58 db 28 9a
		01 59 40 25 2f 55 71 3e 06 1d c1 3e 07 88 91 a3 8e fb cf 57 53 ad 8e f1
		70 ad 3c 73 53 d1 6d 9d a7 73 b9 ca 7f 2b 9f a1 b6 c0 d4 a3 d0 3f 75 e0
		9c 30 ba 1e 62 97 2a c4 6f 75 f7 b9 81 be 63 43 9b 29 99 ce 13 06 46 15
		13 98 91 d5 e4 c5 b4 06 f1 6e 3f c1 81 a7 7c a4 75 84 00 25 db 2f 0a 77
		f8 1b 5a b0 5b 94 c0 13 46 75 5f 69 23 2c 86 51 9d 86 cb ee ac 87 aa c3
		47 d1 43 f9 60 5d 64 f6 50 db 4d 02 3e 70 e9 52 ca 49 fe 51 37 12 1c 74
		bc 26 97 68 7e 24 87 46 d6 df 35 30 05 f3 bc e1 86 96 12 9c 81 53 55 6b
		3b 6c 67 79 b3 7b f1 59 85 68 4f`)
	// {client} send application_data record: client seq 0, payload 00 01 .. 31.
	rfc8448ClientData = unhex(`17 03 03 00 43 a2 3f 70 54 b6 2c 94 d0 af fa fe 82 28 ba 55 cb ef ac ea
		42 f9 14 aa 66 bc ab 3f 2b 98 19 a8 a5 b4 6b 39 5b d5 4a 9a 20 44 1e 2b
		62 97 4e 1f 5a 62 92 a2 97 70 14 bd 1e 3d ea e6 3a ee bb 21 69 49 15 e4`)
	// {server} send application_data record: server seq 1, the same payload.
	rfc8448ServerData = unhex(`17 03 03 00 43 2e 93 7e 11 ef 4a c7 40 e5 38 ad 36 00 5f c4 a4 69 32 fc
		32 25 d0 5f 82 aa 1b 36 e3 0e fa f9 7d 90 e6 df fc 60 2d cb 50 1a 59 a8
		fc c4 9c 4b f2 e5 f0 a2 1c 00 47 c2 ab f3 32 54 0d d0 32 e1 67 c2 95 5d`)
	// {client} send alert record: close_notify, client seq 1.
	rfc8448ClientClose = unhex("17 03 03 00 13 c9 87 27 60 65 56 66 b7 4d 7f f1 15 3e fd 6d b6 d0 b0 e3")
	// {server} send alert record: close_notify, server seq 2.
	rfc8448ServerClose = unhex("17 03 03 00 13 b5 8f d6 71 66 eb f5 99 d2 47 20 cf be 7e fa 7a 88 64 a9")
)

// rfc8448Payload is the 50 bytes both sides send: 00 01 02 .. 31.
func rfc8448Payload() []byte {
	p := make([]byte, 50)
	for i := range p {
		p[i] = byte(i)
	}
	return p
}

func unhex(s string) []byte {
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		panic(err)
	}
	return b
}

// TestRFC8448Keys derives the application traffic keys and IVs from the RFC's secrets.
func TestRFC8448Keys(t *testing.T) {
	c, err := New(tls.TLS_AES_128_GCM_SHA256, Client, rfc8448ClientSecret, rfc8448ServerSecret)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []struct {
		name      string
		got, want []byte
	}{
		{"client key", c.wr.key[:16], rfc8448ClientKey},
		{"client iv", c.wr.iv[:], rfc8448ClientIV},
		{"server key", c.rd.key[:16], rfc8448ServerKey},
		{"server iv", c.rd.iv[:], rfc8448ServerIV},
	} {
		if !bytes.Equal(k.got, k.want) {
			t.Errorf("%s = %x, RFC 8448 says %x", k.name, k.got, k.want)
		}
	}
}

// TestRFC8448Client plays the client of RFC 8448 section 3: it opens the server's
// NewSessionTicket, data and close_notify, and seals exactly the client's records.
func TestRFC8448Client(t *testing.T) {
	c, err := New(tls.TLS_AES_128_GCM_SHA256, Client, rfc8448ClientSecret, rfc8448ServerSecret)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Seal(nil, rfc8448Payload()); !bytes.Equal(got, rfc8448ClientData) {
		t.Errorf("Seal = %x\nRFC 8448 client record %x", got, rfc8448ClientData)
	}
	if got := c.CloseNotify(nil); !bytes.Equal(got, rfc8448ClientClose) {
		t.Errorf("CloseNotify = %x\nRFC 8448 client alert %x", got, rfc8448ClientClose)
	}
	in := slices.Concat(rfc8448TicketRecord, rfc8448ServerData, rfc8448ServerClose)
	out, n, err := c.Open(nil, in)
	var e *Error
	if !errors.As(err, &e) || e.Reason != ReasonClosed {
		t.Fatalf("Open: err %v, want %s", err, ReasonClosed)
	}
	if want := len(rfc8448TicketRecord) + len(rfc8448ServerData); n != want {
		t.Errorf("Open consumed %d bytes, want %d (up to the close_notify)", n, want)
	}
	if !bytes.Equal(out, rfc8448Payload()) {
		t.Errorf("Open = %x, want 00..31", out)
	}
	if s := c.Stats(); s != (Stats{Tickets: 1}) {
		t.Errorf("Stats = %+v, want one ticket", s)
	}
}

// TestRFC8448Server plays the server: the client's records open, and after the ticket
// (sequence number 0, sent by the handshake's side) its data and alert seal to the RFC's.
func TestRFC8448Server(t *testing.T) {
	c, err := New(tls.TLS_AES_128_GCM_SHA256, Server, rfc8448ClientSecret, rfc8448ServerSecret)
	if err != nil {
		t.Fatal(err)
	}
	c.wrSeq = 1 // the NewSessionTicket took sequence number 0
	if got := c.Seal(nil, rfc8448Payload()); !bytes.Equal(got, rfc8448ServerData) {
		t.Errorf("Seal = %x\nRFC 8448 server record %x", got, rfc8448ServerData)
	}
	if got := c.CloseNotify(nil); !bytes.Equal(got, rfc8448ServerClose) {
		t.Errorf("CloseNotify = %x\nRFC 8448 server alert %x", got, rfc8448ServerClose)
	}
	// The client's data arrives a byte at a time: nothing is consumed before a record is whole.
	in := slices.Concat(rfc8448ClientData, rfc8448ClientClose)
	var out []byte
	var used int
	for end := 1; end <= len(in); end++ {
		o, n, err := c.Open(out, in[used:end])
		out = o
		used += n
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Reason != ReasonClosed || end != len(in) {
				t.Fatalf("at %d bytes: %v", end, err)
			}
			break
		}
		if end < len(rfc8448ClientData) && n != 0 {
			t.Fatalf("at %d bytes of a %d-byte record Open consumed %d", end, len(rfc8448ClientData), n)
		}
	}
	if used != len(rfc8448ClientData) || !bytes.Equal(out, rfc8448Payload()) {
		t.Errorf("consumed %d, out %x; want %d and 00..31", used, out, len(rfc8448ClientData))
	}
}
