package codec

// Pingreq and Pingresp have no variable header or payload; their wire form is two fixed bytes
// in every version.

// AppendPingreq appends a PINGREQ to dst and returns the extended slice.
func AppendPingreq(dst []byte) []byte { return append(dst, byte(TypePingreq)<<4, 0) }

// AppendPingresp appends a PINGRESP to dst and returns the extended slice.
func AppendPingresp(dst []byte) []byte { return append(dst, byte(TypePingresp)<<4, 0) }

// SizePing is the wire size of PINGREQ and PINGRESP.
const SizePing = 2

// DecodePingreq checks the body of a PINGREQ, which must be empty.
func DecodePingreq(body []byte) error { return decodeEmpty(body) }

// DecodePingresp checks the body of a PINGRESP, which must be empty.
func DecodePingresp(body []byte) error { return decodeEmpty(body) }

func decodeEmpty(body []byte) error {
	if len(body) != 0 {
		return ErrTrailingBytes // sections 3.12.2, 3.13.2: no variable header, no payload
	}
	return nil
}
