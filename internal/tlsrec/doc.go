// Package tlsrec owns the TLS 1.3 record layer of a connection after crypto/tls has done
// its handshake (RFC 8446 section 5): the application traffic keys derived from the
// secrets crypto/tls's KeyLogWriter hands out (section 7), sealing application data into
// records and opening the peer's, and the post-handshake messages (a NewSessionTicket is
// counted and dropped; a KeyUpdate moves the read key and, when asked, queues our own),
// alerts and protocol violations, each ending the connection with a named reason.
//
// It promises: Seal and Open do not allocate once the cipher state is built and the
// caller's buffers have room; an idle Conn (after Release) keeps only what rebuilding
// needs (the current traffic secrets, keys, IVs and sequence numbers, the suite), about
// 240 bytes; every input, however hostile, ends in data or a *Error, never a panic;
// a record is judged by its header before its body is waited for.
//
// It must not: log or print; keep or reveal key material beyond the Conn (no String of
// it, no error holding it; Format prints none); do network I/O or start goroutines; run
// a handshake, TLS 1.2 or anything but the three TLS 1.3 AEAD suites. The ciphers are
// the standard library's AES-GCM and golang.org/x/crypto's ChaCha20-Poly1305.
package tlsrec
