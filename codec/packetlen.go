package codec

// PacketLen returns the whole size (fixed header included) of the packet that starts buf,
// read from its fixed header: what a reader holding a cut packet waits for before calling
// Split again. ok is false while the fixed header is incomplete, and for one Split rejects.
func PacketLen(buf []byte) (n int, ok bool) {
	if len(buf) < 2 {
		return 0, false
	}
	rem, off, err := readVarint(buf, 1)
	if err != nil {
		return 0, false
	}
	return off + rem, true
}
