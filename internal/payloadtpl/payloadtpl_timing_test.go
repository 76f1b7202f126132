package payloadtpl

import (
	"testing"
	"time"
)

// benchTemplates are BenchmarkClientPublishTemplate's two: device has every kind of
// placeholder, reading a sensor's four and the mark.
var benchTemplates = []struct{ name, src string }{
	{"device", `{"device":"{{client_id}}","n":{{client_index}},"seq":{{seq}},"ts":{{unix_ms}},"at":"{{rfc3339}}",` +
		`"temp":{{rand_float 18.0 31.5}},"rpm":{{rand_int 900 3100}},"state":"{{choice idle|run|fault}}","fw":"{{rand_text 8}}","m":"{{mark}}"}`},
	{"reading", `{"device":"{{client_id}}","seq":{{seq}},"ts":{{unix_ms}},"temp":{{rand_float 18.0 31.5}},"m":"{{mark}}"}`},
}

// BenchmarkAppend renders each template per message as the reactor does: a new sequence
// number and a clock 500 ns on per message (2M msg/s), into a slice with room.
func BenchmarkAppend(b *testing.B) {
	for _, c := range benchTemplates {
		b.Run(c.name, func(b *testing.B) {
			tp, err := Compile(c.src)
			if err != nil {
				b.Fatal(err)
			}
			dst := make([]byte, 0, tp.Room(16))
			v := Vars{ClientID: []byte("mqblast-pub-17"), ClientIndex: 17, Mark: make([]byte, MarkLen)}
			now := time.Now().UnixNano()
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				v.Seq = uint32(i)
				v.Now = now + int64(i)*500
				dst = tp.Append(dst[:0], &v)
			}
			b.SetBytes(int64(len(dst)))
		})
	}
}
