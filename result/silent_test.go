package result

import (
	"testing"
)

// silentPart is a part of a run's result: its silent publishers (sp) and its join.
func silentPart(received, lost int64, sp *SilentPublishers, j *Join) *Result {
	r := &Result{Schema: Schema, Join: j}
	r.Messages.Received, r.Messages.Lost, r.Messages.Silent = received, lost, sp
	return r
}

// TestMergeSilent: the parts' silent publishers add; a candidate of one part (receivers
// elsewhere, none of its copies in it) is judged not silent when another part received a
// copy, silent when none did, and left not judged when a join left pieces out. The
// loss is confined only while copies of other publishers arrived and the silent
// publishers' copies are at least half of the lost ones.
func TestMergeSilent(t *testing.T) {
	t.Parallel()
	a := silentPart(100, 0, &SilentPublishers{Of: 2, NotJudged: 2}, &Join{Silent: []JoinSilent{
		{Publisher: 1, Copies: 40, ClientID: "p-1", Topic: "t/1"}, {Publisher: 2, Copies: 40, ClientID: "p-2", Topic: "t/2"}}})
	b := silentPart(100, 0, &SilentPublishers{Publishers: 1, Copies: 30, Of: 3, Examples: []SilentExample{{"p-9", "t/9", 30}},
		Topics: []string{"t/9"}}, &Join{Streams: []JoinStreams{{Publisher: 2, Cover: Cover{0, 1, 40, 0}}}})
	// The merged figures come from the snapshots; these parts carry only what the test sets.
	for _, r := range []*Result{a, b} {
		r.Total = NewSnapshot()
		r.Total.Received = r.Messages.Received
		r.Total.Expected = r.Messages.Received + 70 // 70 lost in all: 40 of p-1's, 30 of p-9's
	}
	a.Total.Expected -= 70
	m := Merge([]*Result{a, b})
	sp := m.Messages.Silent
	if sp == nil || sp.Publishers != 2 || sp.Copies != 70 || sp.Of != 7 || sp.NotJudged != 0 || !sp.Confined ||
		len(sp.Examples) != 2 || sp.Examples[0].ClientID != "p-9" || sp.Examples[1].ClientID != "p-1" || m.Messages.Lost != 70 || m.Join != nil {
		t.Errorf("merged: %+v, lost %d, join %+v", sp, m.Messages.Lost, m.Join)
	}
	if a.Messages.Silent.NotJudged != 2 || len(a.Join.Silent) != 2 {
		t.Errorf("the merge changed its input: %+v %+v", a.Messages.Silent, a.Join)
	}

	a.Join.Omitted = "1 received-stream summaries left out over the 16 MiB bound"
	m = Merge([]*Result{a, b})
	if sp := m.Messages.Silent; sp.Publishers != 1 || sp.NotJudged != 1 || sp.Of != 6 || sp.Confined {
		t.Errorf("with pieces left out: %+v, want p-1 not judged and the loss not confined (30 of 70)", sp)
	}

	for _, c := range []struct {
		received, lost int64
		want           bool
	}{{1, 70, true}, {0, 70, false}, {1, 141, false}, {1, 0, false}} {
		sp := &SilentPublishers{Publishers: 1, Copies: 70}
		if sp.confine(c.received, c.lost); sp.Confined != c.want {
			t.Errorf("70 silent copies, received %d, lost %d: confined %v", c.received, c.lost, sp.Confined)
		}
	}
}
