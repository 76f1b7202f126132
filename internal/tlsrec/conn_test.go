package tlsrec

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// twins returns the two ends of one connection under random secrets: a the client, b the
// server. What a seals b opens, and the other way round.
func twins(t testing.TB, suite uint16) (a, b *Conn) {
	t.Helper()
	hashLen, _ := suiteSizes(suite)
	r := rand.NewChaCha8([32]byte{byte(suite), byte(suite >> 8)})
	cs, ss := make([]byte, hashLen), make([]byte, hashLen)
	_, _ = r.Read(cs)
	_, _ = r.Read(ss)
	var err error
	if a, err = New(suite, Client, cs, ss); err != nil {
		t.Fatal(err)
	}
	if b, err = New(suite, Server, cs, ss); err != nil {
		t.Fatal(err)
	}
	return a, b
}

// record seals one record of content type typ from c (the cipher state built).
func record(c *Conn, typ byte, content []byte) []byte {
	c.state()
	return c.sealRecord(nil, typ, content)
}

// padded seals one record with pad zero bytes after the content type.
func padded(c *Conn, typ byte, content []byte, pad int) []byte {
	c.state()
	return c.sealPadded(nil, typ, content, pad)
}

func keyUpdateMsg(req byte) []byte { return []byte{msgKeyUpdate, 0, 0, 1, req} }

// ticketMsg is a NewSessionTicket of a 32-byte ticket: lifetime, age_add, a 1-byte nonce,
// the ticket and no extensions.
func ticketMsg() []byte {
	body := []byte{0, 0, 0x1c, 0x20, 1, 2, 3, 4, 1, 0xaa, 0, 32}
	body = append(body, bytes.Repeat([]byte{0x5c}, 32)...)
	body = append(body, 0, 0)
	return append([]byte{msgNewSessionTicket, 0, 0, byte(len(body))}, body...)
}

func reasonOf(err error) (string, string) {
	var e *Error
	if !errors.As(err, &e) {
		return "", ""
	}
	return e.Reason, e.Alert
}

// TestOpenBadInput feeds a good record then one that must end the connection: the named
// reason comes back, the good data and the bytes it took are kept, and Open keeps
// returning the same error.
func TestOpenBadInput(t *testing.T) {
	for _, s := range suites {
		t.Run(s.name, func(t *testing.T) {
			for _, tc := range []struct {
				name   string
				bad    func(a *Conn) []byte
				reason string
				alert  string
				extra  int // bytes of bad that are whole and good before what ends it
			}{
				{"record over 2^14+256, header only", func(*Conn) []byte { return []byte{23, 3, 3, 0x41, 0x01} }, ReasonOverflow, "", 0},
				{"plaintext over 2^14", func(a *Conn) []byte { return record(a, typeAppData, make([]byte, maxPlain+1)) }, ReasonOverflow, "", 0},
				{"2^14 of data and a byte of padding", func(a *Conn) []byte {
					return padded(a, typeAppData, make([]byte, maxPlain), 1)
				}, ReasonOverflow, "", 0},
				{"flipped bit", func(a *Conn) []byte {
					r := record(a, typeAppData, []byte("tampered"))
					r[len(r)-3] ^= 0x10
					return r
				}, ReasonBadMAC, "", 0},
				{"flipped header bit", func(a *Conn) []byte {
					r := record(a, typeAppData, []byte("tampered"))
					r[1] ^= 1 // the header is the additional data
					return r
				}, ReasonBadMAC, "", 0},
				{"record shorter than a tag", func(*Conn) []byte { return append([]byte{23, 3, 3, 0, 16}, make([]byte, 16)...) }, ReasonBadMAC, "", 0},
				{"change_cipher_spec", func(*Conn) []byte { return []byte{20, 3, 3, 0, 1, 1} }, ReasonUnexpected, "", 0},
				{"plaintext alert", func(*Conn) []byte { return []byte{21, 3, 3, 0, 2, 2, 40} }, ReasonUnexpected, "", 0},
				{"unknown outer type", func(*Conn) []byte { return []byte{99, 3, 3, 0, 1, 0} }, ReasonUnexpected, "", 0},
				{"protected change_cipher_spec", func(a *Conn) []byte { return record(a, typeCCS, []byte{1}) }, ReasonUnexpected, "", 0},
				{"unknown inner type", func(a *Conn) []byte { return record(a, 99, []byte("x")) }, ReasonUnexpected, "", 0},
				{"padding only", func(a *Conn) []byte { return record(a, 0, []byte{0, 0, 0}) }, ReasonUnexpected, "", 0},
				{"empty handshake record", func(a *Conn) []byte { return record(a, typeHandshake, nil) }, ReasonUnexpected, "", 0},
				{"empty alert record", func(a *Conn) []byte { return record(a, typeAlert, nil) }, ReasonDecode, "", 0},
				{"Finished after the handshake", func(a *Conn) []byte {
					return record(a, typeHandshake, append([]byte{20, 0, 0, 32}, make([]byte, 32)...))
				}, ReasonUnexpected, "", 0},
				{"CertificateRequest after a ticket", func(a *Conn) []byte {
					return record(a, typeHandshake, append(ticketMsg(), 13, 0, 0, 0))
				}, ReasonUnexpected, "", 0},
				{"KeyUpdate request_update 2", func(a *Conn) []byte { return record(a, typeHandshake, keyUpdateMsg(2)) }, ReasonDecode, "", 0},
				{"KeyUpdate of 2 bytes", func(a *Conn) []byte {
					return record(a, typeHandshake, []byte{msgKeyUpdate, 0, 0, 2, 0, 0})
				}, ReasonDecode, "", 0},
				{"KeyUpdate not ending its record", func(a *Conn) []byte {
					return record(a, typeHandshake, append(keyUpdateMsg(0), ticketMsg()...))
				}, ReasonUnexpected, "", 0},
				{"ticket too short", func(a *Conn) []byte { return record(a, typeHandshake, []byte{4, 0, 0, 3, 0, 0, 0}) }, ReasonDecode, "", 0},
				{"ticket over the largest possible", func(a *Conn) []byte {
					return record(a, typeHandshake, []byte{4, 3, 0, 0, 0})
				}, ReasonDecode, "", 0},
				{"data inside a cut handshake message", func(a *Conn) []byte {
					return slices.Concat(record(a, typeHandshake, ticketMsg()[:6]), record(a, typeAppData, []byte("x")))
				}, ReasonUnexpected, "", 6 + recordOver},
				{"alert of 3 bytes", func(a *Conn) []byte { return record(a, typeAlert, []byte{2, 40, 0}) }, ReasonDecode, "", 0},
				{"close_notify", func(a *Conn) []byte { return a.CloseNotify(nil) }, ReasonClosed, "", 0},
				{"bad_certificate", func(a *Conn) []byte { return record(a, typeAlert, []byte{2, 42}) }, ReasonAlert, "bad certificate", 0},
				{"internal_error", func(a *Conn) []byte { return record(a, typeAlert, []byte{2, 80}) }, ReasonAlert, "internal error", 0},
				{"KeyUpdate storm", func(a *Conn) []byte {
					var b []byte
					for range maxKeyUpdateRun + 1 {
						b = a.KeyUpdate(b, false)
					}
					return b
				}, ReasonKeyUpdateStorm, "", maxKeyUpdateRun * keyUpdateRec},
			} {
				t.Run(tc.name, func(t *testing.T) {
					a, b := twins(t, s.id)
					good := a.Seal(nil, []byte("good data"))
					bad := tc.bad(a)
					in := append(slices.Clone(good), bad...)
					out, n, err := b.Open([]byte("kept:"), in)
					reason, alert := reasonOf(err)
					if reason != tc.reason || alert != tc.alert {
						t.Fatalf("err %v, want reason %q alert %q", err, tc.reason, tc.alert)
					}
					if string(out) != "kept:good data" {
						t.Errorf("out %q, want the good data kept", out)
					}
					if wantN := len(good) + tc.extra; n != wantN {
						t.Errorf("n = %d, want %d", n, wantN)
					}
					out, n, err = b.Open(nil, in[n:])
					if r, _ := reasonOf(err); r != tc.reason || n != 0 || len(out) != 0 {
						t.Errorf("again: %q, n %d, out %q; want the same reason, nothing consumed", r, n, out)
					}
				})
			}
		})
	}
}

// TestOpenHandshakeMessages covers post-handshake messages cut across records and
// sharing records, user_canceled, and KeyUpdates up to the bound with data between them.
func TestOpenHandshakeMessages(t *testing.T) {
	for _, s := range suites {
		t.Run(s.name, func(t *testing.T) {
			a, _ := twins(t, s.id)
			nst := ticketMsg()
			ku := keyUpdateMsg(0)
			var in []byte
			in = append(in, record(a, typeHandshake, nst[:2])...)                 // a ticket in three records
			in = append(in, record(a, typeHandshake, nst[2:20])...)               //
			in = append(in, record(a, typeHandshake, nst[20:])...)                //
			in = append(in, record(a, typeHandshake, slices.Concat(nst, nst))...) // two in one
			in = append(in, record(a, typeAlert, []byte{1, 90})...)               // user_canceled, ignored
			in = append(in, padded(a, typeAppData, []byte("o"), 200)...)          // padded records
			in = append(in, padded(a, typeAppData, nil, maxPlain)...)             // all padding but the type
			in = append(in, padded(a, typeAppData, []byte("ne"), 3)...)
			in = append(in, record(a, typeHandshake, ku[:3])...) // a KeyUpdate cut in its header
			in = append(in, record(a, typeHandshake, ku[3:])...)
			a.wr.next(a.suite) // the record carrying the KeyUpdate ends; a's key moves as b's must
			a.wrSeq = 0
			a.st.wr = a.wr.aead(a.suite)
			in = a.Seal(in, []byte(" two"))
			for range maxKeyUpdateRun { // a full run, then data resets it
				in = a.KeyUpdate(in, false)
			}
			in = a.Seal(in, []byte(" three"))
			for range maxKeyUpdateRun {
				in = a.KeyUpdate(in, false)
			}
			in = a.Seal(in, []byte(" four"))

			// Any split of the stream gives the same result.
			for _, cut := range []int{1, 5, 17, 100, len(in)} {
				_, b2 := twins(t, s.id)
				var out []byte
				var used int
				for end := 0; end < len(in); {
					end = min(end+cut, len(in))
					o, n, err := b2.Open(out, in[used:end])
					if err != nil {
						t.Fatalf("cut %d at %d: %v", cut, end, err)
					}
					out, used = o, used+n
				}
				if string(out) != "one two three four" || used != len(in) {
					t.Fatalf("cut %d: out %q used %d of %d", cut, out, used, len(in))
				}
				want := Stats{Tickets: 3, KeyUpdatesIn: 1 + 2*maxKeyUpdateRun}
				if got := b2.Stats(); got != want {
					t.Fatalf("cut %d: Stats %+v, want %+v", cut, got, want)
				}
			}
		})
	}
}

// TestKeyUpdateAnswer: KeyUpdates asking for ours, received while we are silent, get one
// answer (RFC 8446 section 4.6.3), sent by Pending or by Seal before its data.
func TestKeyUpdateAnswer(t *testing.T) {
	for _, s := range suites {
		for _, viaSeal := range []bool{false, true} {
			a, b := twins(t, s.id)
			var in []byte
			for range 3 {
				in = a.KeyUpdate(in, true)
			}
			in = a.Seal(in, []byte("ping"))
			out, n, err := b.Open(nil, in)
			if err != nil || n != len(in) || string(out) != "ping" {
				t.Fatalf("%s: Open: %q %d %v", s.name, out, n, err)
			}
			if viaSeal {
				in = b.Seal(nil, []byte("pong")) // the answer goes first
			} else {
				in = b.Pending(nil)
				if len(in) != keyUpdateRec {
					t.Fatalf("%s: Pending gave %d bytes, want one KeyUpdate record (%d)", s.name, len(in), keyUpdateRec)
				}
				if again := b.Pending(nil); len(again) != 0 {
					t.Fatalf("%s: Pending twice gave %d bytes", s.name, len(again))
				}
				in = b.Seal(in, []byte("pong"))
			}
			out, n, err = a.Open(nil, in)
			if err != nil || n != len(in) || string(out) != "pong" {
				t.Fatalf("%s: answer: %q %d %v", s.name, out, n, err)
			}
			if a.Stats() != (Stats{KeyUpdatesIn: 1, KeyUpdatesOut: 3}) || b.Stats() != (Stats{KeyUpdatesIn: 3, KeyUpdatesOut: 1}) {
				t.Fatalf("%s: stats a %+v b %+v", s.name, a.Stats(), b.Stats())
			}
		}
	}
}

// TestSealSplitsAndUpdates: a large Seal is records of at most 2^14 bytes of data, and
// the write key is updated after 2^24 records without the caller asking.
func TestSealSplitsAndUpdates(t *testing.T) {
	a, b := twins(t, tls.TLS_AES_128_GCM_SHA256)
	plain := make([]byte, 5*maxPlain+3)
	for i := range plain {
		plain[i] = byte(i * 31)
	}
	sealed := a.Seal(nil, plain)
	var lens []int
	for r := sealed; len(r) > 0; {
		l := int(r[3])<<8 | int(r[4])
		lens = append(lens, l-1-tagLen)
		r = r[headerLen+l:]
	}
	if !slices.Equal(lens, []int{maxPlain, maxPlain, maxPlain, maxPlain, maxPlain, 3}) {
		t.Fatalf("record data sizes %v", lens)
	}
	out, _, err := b.Open(nil, sealed)
	if err != nil || !bytes.Equal(out, plain) {
		t.Fatalf("Open: %v, equal %v", err, bytes.Equal(out, plain))
	}

	a.wrSeq, b.rdSeq = keyUpdateAfter-1, keyUpdateAfter-1
	a.Release() // the nonce state is rebuilt, not kept
	sealed = a.Seal(nil, plain[:3*maxPlain])
	out, n, err := b.Open(nil, sealed)
	if err != nil || n != len(sealed) || !bytes.Equal(out, plain[:3*maxPlain]) {
		t.Fatalf("across the update: %v", err)
	}
	if a.Stats().KeyUpdatesOut != 1 || b.Stats().KeyUpdatesIn != 1 || a.wrSeq != 2 {
		t.Fatalf("stats a %+v b %+v, write seq %d", a.Stats(), b.Stats(), a.wrSeq)
	}
}

// TestNewRefuses: suites other than the three, and secrets of the wrong length.
func TestNewRefuses(t *testing.T) {
	s32, s48 := make([]byte, 32), make([]byte, 48)
	for _, tc := range []struct {
		suite  uint16
		cs, ss []byte
	}{
		{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, s32, s32},
		{tls.TLS_AES_128_GCM_SHA256, s48, s32},
		{tls.TLS_AES_256_GCM_SHA384, s32, s32},
		{tls.TLS_CHACHA20_POLY1305_SHA256, s32, nil},
	} {
		if c, err := New(tc.suite, Client, tc.cs, tc.ss); err == nil || c != nil {
			t.Errorf("New(%#x, %d, %d bytes) = %v, %v", tc.suite, len(tc.cs), len(tc.ss), c, err)
		}
	}
	if Supported(tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256) || !Supported(tls.TLS_CHACHA20_POLY1305_SHA256) {
		t.Error("Supported is wrong")
	}
}

// TestFormatHidesKeys: no verb of fmt prints a Conn's secrets or keys.
func TestFormatHidesKeys(t *testing.T) {
	c, _ := twins(t, tls.TLS_AES_128_GCM_SHA256)
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%x", "%d", "%q"} {
		got := fmt.Sprintf(verb, c)
		for _, k := range [][]byte{c.wr.secret[:8], c.wr.key[:8], c.rd.secret[:8], c.rd.key[:8]} {
			if strings.Contains(got, fmt.Sprintf("%x", k)) || strings.Contains(got, strings.Trim(fmt.Sprintf("%d", k), "[]")) {
				t.Errorf("%s prints key material: %s", verb, got)
			}
		}
	}
}

// TestSealOpenAllocs: Seal and Open allocate nothing once the cipher state is built.
func TestSealOpenAllocs(t *testing.T) {
	for _, s := range suites {
		a, _ := twins(t, s.id)
		plain := make([]byte, 512)
		buf := make([]byte, 0, 2*maxPlain)
		out := make([]byte, 0, 2*maxPlain)
		a.Seal(nil, plain)
		allocs := testing.AllocsPerRun(1000, func() {
			buf = a.Seal(buf[:0], plain)
		})
		if allocs != 0 {
			t.Errorf("%s: Seal allocates %.1f times per call", s.name, allocs)
		}
		a2, b2 := twins(t, s.id)
		var stream [][]byte
		for range 1001 {
			stream = append(stream, a2.Seal(nil, plain))
		}
		b2.state()
		i := 0
		allocs = testing.AllocsPerRun(1000, func() {
			var err error
			out, _, err = b2.Open(out[:0], stream[i])
			if err != nil {
				t.Fatal(err)
			}
			i++
		})
		if allocs != 0 {
			t.Errorf("%s: Open allocates %.1f times per call", s.name, allocs)
		}
	}
}

// TestIdleHeap measures the live heap of 10,000 Conns, released (what an idle connection
// keeps) and with their cipher state built. The released bound is the Conn's size class:
// two directions of 48-byte secret, 32-byte key, 12-byte IV and sequence number (200 B),
// the state pointer, counters and flags (236 B in all), rounded to the 240-byte class;
// 256 leaves room for an allocator's rounding, nothing more.
func TestIdleHeap(t *testing.T) {
	const n = 10_000
	for _, s := range suites {
		conns := make([]*Conn, n)
		hashLen, _ := suiteSizes(s.id)
		secret := make([]byte, hashLen)
		heap := func() uint64 {
			runtime.GC()
			runtime.GC()
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			return m.HeapAlloc
		}
		before := heap()
		for i := range conns {
			c, err := New(s.id, Client, secret, secret)
			if err != nil {
				t.Fatal(err)
			}
			conns[i] = c
		}
		idle := heap()
		for _, c := range conns {
			c.state()
		}
		built := heap()
		for _, c := range conns {
			c.Release()
		}
		released := heap()
		runtime.KeepAlive(conns)
		per := func(a, b uint64) float64 { return (float64(a) - float64(b)) / n }
		t.Logf("%s: per Conn %.0f B new, %.0f B with the cipher state built, %.0f B released",
			s.name, per(idle, before), per(built, before), per(released, before))
		if p := per(released, before); p > 256 {
			t.Errorf("%s: a released Conn holds %.0f B, want ≤ 256", s.name, p)
		}
		if p := per(idle, before); p > 256 {
			t.Errorf("%s: a new Conn holds %.0f B, want ≤ 256", s.name, p)
		}
		// Built: two AEADs (AES-GCM keeps both key schedules and its GHASH table,
		// about 800 B a direction; ChaCha20-Poly1305 only its 32-byte key).
		if p := per(built, before); p > 2048 {
			t.Errorf("%s: a Conn with its cipher state holds %.0f B, want ≤ 2048", s.name, p)
		}
	}
}
