package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/mqblast/mqblast/result"
)

// TestSummaryBrokerSysDiffers: the broker's $SYS counts beside mqblast's read "they
// agree" when they are equal, once the reader's own $SYS copies and the copies mqblast
// does not count as received are set apart; a difference names only what differs.
func TestSummaryBrokerSysDiffers(t *testing.T) {
	t.Parallel()
	check := func(name string, rx, tx, unexpected int64, want, wantNot string) {
		t.Helper()
		r := &result.Result{Schema: result.Schema}
		r.Messages.Published, r.Messages.Received, r.Messages.UnexpectedTotal = 4001, 400100, unexpected
		r.BrokerSys = &result.BrokerSys{Source: "127.0.0.1:1883", Read: 300, ReadCounted: 290, Fresh: true, Comparable: true,
			Totals: map[string]int64{result.SysPublishReceived: rx, result.SysPublishSent: tx}}
		var buf bytes.Buffer
		if err := WriteSummary(&buf, r); err != nil {
			t.Fatal(err)
		}
		if s := buf.String(); !strings.Contains(s, want) || strings.Contains(s, wantNot) {
			t.Errorf("%s: want %q and no %q in the summary:\n%s", name, want, wantNot, s)
		}
	}
	check("equal", 4001, 400100+290, 0, "they agree", "differ")
	check("sent only", 4001, 400100+290+4, 0, "they differ: broker minus mqblast +4 sent, its 290", "+0")
	check("received only", 4000, 400100+290, 0, "they differ: broker minus mqblast -1 received, its 290", "+0")
	check("unexpected copies", 4001, 400100+290+100, 100, "received 400,100 and 100 other copies", "differ")
}
