//go:build !race

package payloadtpl

import (
	"testing"
	"time"
)

// TestAppendAllocs: rendering every placeholder into a slice with room allocates nothing.
func TestAppendAllocs(t *testing.T) {
	tp, err := Compile(`{"id":"{{client_id}}","i":{{client_index}},"s":{{seq}},"ms":{{unix_ms}},"us":{{unix_us}},"at":"{{rfc3339}}",` +
		`"n":{{rand_int 1 1000}},"f":{{rand_float 0 100}},"c":"{{choice a|b|c}}","t":"{{rand_text 40}}","m":"{{mark}}"}`)
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]byte, 0, tp.Room(16))
	v := Vars{ClientID: []byte("client-0000001"), Mark: make([]byte, MarkLen)}
	if n := testing.AllocsPerRun(1000, func() {
		v.Seq++
		v.Now = time.Now().UnixNano()
		dst = tp.Append(dst[:0], &v)
	}); n != 0 {
		t.Errorf("%v allocations per rendering, want 0", n)
	}
}
