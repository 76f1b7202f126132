package codec

import (
	"math/rand/v2"
	"testing"
)

// TestCheckTopicName holds the one-pass (SWAR) topic check against the plain definition, on
// every interesting byte at every position of strings around the 8-byte word size, then on
// random mixes.
func TestCheckTopicName(t *testing.T) {
	t.Parallel()
	ref := func(s []byte) error {
		if !validString(s) {
			return ErrMalformedString
		}
		if !validTopicName(s) {
			return ErrMalformedTopic
		}
		return nil
	}
	special := []byte{0, 1, '+', '#', '/', 0x7f, 0x80, 0xc3, 0xa9, 0xed, 0xff}
	for n := 0; n <= 24; n++ {
		for pos := 0; pos < n; pos++ {
			for _, c := range special {
				s := make([]byte, n)
				for i := range s {
					s[i] = 'a' + byte(i%26)
				}
				s[pos] = c
				if got, want := checkTopicName(s), ref(s); got != want { //nolint:errorlint // sentinels, exact
					t.Fatalf("%q: got %v, want %v", s, got, want)
				}
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		s := make([]byte, r.IntN(40))
		for i := range s {
			s[i] = special[r.IntN(len(special))]
			if r.IntN(2) == 0 {
				s[i] = 'a'
			}
		}
		// With both a wildcard and bad UTF-8 either error is right: compare only the verdict.
		if got, want := checkTopicName(s), ref(s); (got == nil) != (want == nil) {
			t.Fatalf("%q: got %v, want %v", s, got, want)
		}
	}
}
