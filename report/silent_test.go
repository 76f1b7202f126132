package report

import (
	"strings"
	"testing"

	"github.com/mqblast/mqblast/result"
)

// TestSilentLine: the LOST line names the first silent publishers and counts the rest, lists
// their topics when they are more than the named ones show, says what the other publishers
// lost, the run's failed connections and refused subscriptions, the publishers not judged,
// and the rule; a loss not confined has none, and one with publishers not judged says so.
func TestSilentLine(t *testing.T) {
	t.Parallel()
	r := &result.Result{}
	r.Messages.Lost, r.Messages.Received, r.Messages.Scheduled = 110, 500, 610
	r.Connections.Failed, r.Messages.SubscribeFailed = 1, 2
	sp := &result.SilentPublishers{Of: 20, NotJudged: 3}
	for _, n := range []string{"0", "1", "2", "3", "4", "5", "6"} {
		sp.AddSilent(result.SilentExample{ClientID: "pub-" + n, Topic: "d/" + n + "/t", Copies: 15})
	}
	r.Messages.Silent = sp
	sp.Confined = true
	got := SilentLine(r)
	for _, want := range []string{
		"all 105 copies of 7 of 20 publishers (pub-0 on d/0/t, pub-1 on d/1/t, pub-2 on d/2/t, pub-3 on d/3/t, pub-4 on d/4/t, 2 more), their connections healthy",
		"Their topics: d/0/t, d/1/t, d/2/t, d/3/t, d/4/t, more.",
		"1 connections of the run failed or dropped and 2 subscriptions were refused",
		"The other publishers lost 5 copies.",
		"not judged: 3 publishers",
		"(" + result.LossConfinedRule + ")",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("line\n%s\nlacks\n%s", got, want)
		}
	}
	sp.Confined = false
	if l := SilentLine(r); l != "" {
		t.Errorf("not confined: %q", l)
	}
	if l := NotJudgedLine(&r.Messages); !strings.HasPrefix(l, "not judged: 3 publishers") {
		t.Errorf("not judged: %q", l)
	}
}
