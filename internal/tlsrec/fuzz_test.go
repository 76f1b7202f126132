package tlsrec

import (
	"bytes"
	"crypto/tls"
	"slices"
	"testing"
)

// fuzzStream turns fuzz input into the bytes a Conn opens. With sealed false, in is the
// stream itself (the header checks, and records that fail to authenticate). With sealed
// true, in is a list of inner records — content type, a length byte pair, content — that
// the twin a seals (lengths clipped to what is there), so that the fuzzer reaches what
// lies behind authentication: padding, content types, handshake messages, alerts.
func fuzzStream(a *Conn, in []byte, sealed bool) []byte {
	if !sealed {
		return in
	}
	var out []byte
	for len(in) >= 3 {
		typ, l := in[0], int(in[1])<<8|int(in[2])
		in = in[3:]
		l = min(l, len(in))
		out = append(out, record(a, typ, in[:l])...)
		in = in[l:]
	}
	return out
}

// FuzzOpen holds, for any input:
//  1. Open does not panic.
//  2. n is never beyond len(in), and out only grows: it starts with dst, unchanged.
//  3. Feeding the input cut in two gives the same data, bytes consumed and reason as
//     feeding it whole.
//  4. After an error Open consumes nothing more and returns the same reason.
func FuzzOpen(f *testing.F) {
	a, _ := twins(f, tls.TLS_AES_128_GCM_SHA256)
	// Seeds: the RFC 8448 records, and records of every kind this package handles.
	f.Add(slices.Concat(rfc8448TicketRecord, rfc8448ServerData, rfc8448ServerClose), uint16(7), false)
	f.Add(a.Seal(nil, []byte("hello")), uint16(3), false)
	f.Add([]byte{23, 3, 3, 0x41, 1}, uint16(2), false)
	f.Add([]byte{20, 3, 3, 0, 1, 1}, uint16(0), false)
	enc := func(typ byte, content []byte) []byte {
		return append([]byte{typ, byte(len(content) >> 8), byte(len(content))}, content...)
	}
	f.Add(slices.Concat(enc(typeAppData, []byte("data")), enc(typeHandshake, ticketMsg()),
		enc(typeHandshake, keyUpdateMsg(1)), enc(typeAppData, []byte("more")), enc(typeAlert, []byte{1, 0})), uint16(40), true)
	f.Add(slices.Concat(enc(typeHandshake, ticketMsg()[:3]), enc(typeHandshake, ticketMsg()[3:]),
		enc(typeAlert, []byte{1, 90}), enc(typeAlert, []byte{2, 42})), uint16(20), true)
	f.Add(slices.Concat(enc(typeHandshake, keyUpdateMsg(0)[:2]), enc(typeHandshake, keyUpdateMsg(0)[2:]),
		enc(0, nil), enc(typeCCS, []byte{1}), enc(99, []byte("x"))), uint16(9), true)

	f.Fuzz(func(t *testing.T, in []byte, cut uint16, sealed bool) {
		open := func(parts ...[]byte) (out []byte, used int, reason string) {
			_, b := twins(t, tls.TLS_AES_128_GCM_SHA256)
			dst := []byte("dst:")
			out = dst
			var pending []byte
			for _, p := range parts {
				pending = append(pending, p...)
				o, n, err := b.Open(out, pending)
				if n < 0 || n > len(pending) {
					t.Fatalf("n = %d of %d", n, len(pending))
				}
				if len(o) < len(out) || !bytes.Equal(o[:len(out)], out) {
					t.Fatalf("out shrank or changed: %q then %q", out, o)
				}
				out, used, pending = o, used+n, pending[n:]
				if err != nil {
					r, _ := reasonOf(err)
					if r == "" {
						t.Fatalf("error not *Error: %v", err)
					}
					o2, n2, err2 := b.Open(out, pending)
					if r2, _ := reasonOf(err2); r2 != r || n2 != 0 || len(o2) != len(out) {
						t.Fatalf("after %q: %q, n %d", r, r2, n2)
					}
					return out, used, r
				}
			}
			return out, used, ""
		}
		a, _ := twins(t, tls.TLS_AES_128_GCM_SHA256)
		in = fuzzStream(a, in, sealed)
		k := int(cut) % (len(in) + 1)
		wOut, wUsed, wReason := open(in)
		cOut, cUsed, cReason := open(in[:k], in[k:])
		if !bytes.Equal(wOut, cOut) || wUsed != cUsed || wReason != cReason {
			t.Fatalf("whole: %d bytes, %d used, %q; cut at %d: %d bytes, %d used, %q",
				len(wOut), wUsed, wReason, k, len(cOut), cUsed, cReason)
		}
	})
}
