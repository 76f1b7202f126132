package tlsrec

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"errors"
	"hash"

	"golang.org/x/crypto/chacha20poly1305"
)

// maxSecret is the longest traffic secret: SHA-384's output.
const maxSecret = 48

// Supported says whether suite is one this package runs (TLS 1.3: TLS_AES_128_GCM_SHA256,
// TLS_AES_256_GCM_SHA384, TLS_CHACHA20_POLY1305_SHA256).
func Supported(suite uint16) bool {
	switch suite {
	case tls.TLS_AES_128_GCM_SHA256, tls.TLS_AES_256_GCM_SHA384, tls.TLS_CHACHA20_POLY1305_SHA256:
		return true
	}
	return false
}

// suiteSizes gives a suite's hash (and so secret) length and key length.
func suiteSizes(suite uint16) (hashLen, keyLen int) {
	switch suite {
	case tls.TLS_AES_128_GCM_SHA256:
		return 32, 16
	case tls.TLS_AES_256_GCM_SHA384:
		return 48, 32
	default: // TLS_CHACHA20_POLY1305_SHA256
		return 32, 32
	}
}

func suiteHash(suite uint16) func() hash.Hash {
	if suite == tls.TLS_AES_256_GCM_SHA384 {
		return sha512.New384
	}
	return sha256.New
}

// expandLabel is HKDF-Expand-Label (RFC 8446 section 7.1) with an empty context.
func expandLabel(suite uint16, secret []byte, label string, length int) []byte {
	// struct { uint16 length; opaque label<7..255> = "tls13 " + label; opaque context<0..255> }
	info := make([]byte, 0, 2+1+6+len(label)+1)
	info = append(info, byte(length>>8), byte(length), byte(6+len(label)))
	info = append(info, "tls13 "...)
	info = append(info, label...)
	info = append(info, 0)
	out, err := hkdf.Expand(suiteHash(suite), secret, string(info), length)
	if err != nil {
		// Expand fails only for a length over 255 hash blocks, or in FIPS 140-only mode
		// for a key shorter than 112 bits; neither is possible with a suite's own sizes.
		panic("tlsrec: HKDF-Expand-Label: " + err.Error())
	}
	return out
}

// half is one direction's keys: the current traffic secret (kept for KeyUpdate) and the
// AEAD key and IV derived from it. Bytes only (its sequence number is the Conn's), so that
// two of them pack without padding.
type half struct {
	secret [maxSecret]byte
	key    [32]byte
	iv     [12]byte
}

// setSecret makes secret the direction's traffic secret and derives its key and IV
// (RFC 8446 section 7.3); the caller starts its sequence number again at 0.
func (h *half) setSecret(suite uint16, secret []byte) {
	hashLen, keyLen := suiteSizes(suite)
	copy(h.secret[:hashLen], secret)
	copy(h.key[:keyLen], expandLabel(suite, secret, "key", keyLen))
	copy(h.iv[:], expandLabel(suite, secret, "iv", 12))
}

// next moves the direction to the next generation of traffic secret (RFC 8446 section
// 7.2: application_traffic_secret_N+1 = HKDF-Expand-Label(secret_N, "traffic upd", "",
// Hash.length)).
func (h *half) next(suite uint16) {
	hashLen, _ := suiteSizes(suite)
	h.setSecret(suite, expandLabel(suite, h.secret[:hashLen], "traffic upd", hashLen))
}

// aead builds the direction's AEAD from its key.
func (h *half) aead(suite uint16) cipher.AEAD {
	_, keyLen := suiteSizes(suite)
	if suite == tls.TLS_CHACHA20_POLY1305_SHA256 {
		a, err := chacha20poly1305.New(h.key[:keyLen])
		if err != nil {
			panic("tlsrec: ChaCha20-Poly1305: " + err.Error())
		}
		return a
	}
	b, err := aes.NewCipher(h.key[:keyLen])
	if err != nil {
		panic("tlsrec: AES: " + err.Error())
	}
	a, err := cipher.NewGCM(b)
	if err != nil {
		panic("tlsrec: GCM: " + err.Error())
	}
	return a
}

// nonce writes the nonce of the record with sequence number s (the IV XOR s, left-padded
// to the IV's length, RFC 8446 section 5.3) into n.
func (h *half) nonce(n *[12]byte, s uint64) {
	*n = h.iv
	for i := 11; i >= 4; i-- {
		n[i] ^= byte(s)
		s >>= 8
	}
}

var errSecret = errors.New("tlsrec: a traffic secret's length is not the suite's hash length")
var errSuite = errors.New("tlsrec: not a TLS 1.3 cipher suite this package runs")
