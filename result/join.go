package result

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Join is what one part of a run (a worker process, a shard) leaves for the figures that
// need every stream at once where its streams meet another part's: of the messages in
// flight at the end (or when a session ended), the copies that arrived anywhere are
// received and the others in_flight_at_end (in_flight_lost), and a share group's copy
// that members in two parts received is a duplicate. A part's own figures join only its
// own streams; Merge joins the parts'. A Join holds only what crosses parts: a whole run
// has none, nor has a part whose publishers' receivers are all inside it (P2P pairs).
type Join struct {
	// Ends are the part's publishers' messages in flight at the end, or when a session
	// ended, whose copies did not all arrive inside the part, of publishers with receivers
	// outside it.
	Ends []JoinEnd `json:"ends,omitempty"`
	// Streams are what the part's own streams (not share groups) of publishers in other
	// parts received.
	Streams []JoinStreams `json:"streams,omitempty"`
	// Shares are what the part's share groups with members in other parts received.
	Shares []JoinShare `json:"shares,omitempty"`
	// Silent are the part's publishers that may be silent (SilentPublishers): with
	// receivers outside it, none of whose copies arrived in it; silent unless another part
	// received one.
	Silent []JoinSilent `json:"silent,omitempty"`
	// Omitted says what was left out to keep the join within JoinLimit: the figures it
	// would have corrected then count what each part saw alone (Messages.Inexact).
	Omitted string `json:"omitted,omitempty"`
}

// JoinEnd is one publisher's messages in flight at the end of publishing (or dropped with
// a session) whose copies did not all arrive inside the part: sequence number Seqs[i]
// reached Got[i] of the publisher's Receivers streams there.
type JoinEnd struct {
	Publisher uint32   `json:"publisher"`
	Receivers int64    `json:"receivers"`
	Dropped   bool     `json:"dropped,omitempty"` // in flight when a session ended, not at the end
	Seqs      []uint32 `json:"seqs"`
	Got       []int64  `json:"got"`
}

// JoinSilent is a publisher of the part that may be silent (Join.Silent): its expected
// copies, its client id and topic.
type JoinSilent struct {
	Publisher uint32 `json:"publisher"`
	Copies    int64  `json:"copies"`
	ClientID  string `json:"client_id"`
	Topic     string `json:"topic"`
}

// JoinStreams is what the part's own streams of one publisher received: how many of them
// hold each sequence number.
type JoinStreams struct {
	Publisher uint32 `json:"publisher"`
	Cover     Cover  `json:"cover"`
	// Cycle, when set, says that these streams expect only some of the publisher's
	// messages (it cycles over topics), and Cover counts them by the streams' own
	// numbering (Cycle.Index); a publisher has one JoinStreams per such numbering.
	Cycle *Cycle `json:"cycle,omitempty"`
}

// JoinShare is what a share group (the index of its shared filter) received of one
// publisher inside the part, its members' copies together.
type JoinShare struct {
	Share     int    `json:"share"`
	Publisher uint32 `json:"publisher"`
	Seqs      Seqs   `json:"seqs"`
	// Cycle, when set, is the share group's numbering of the publisher's messages (as
	// JoinStreams'): Seqs holds the group's own numbers.
	Cycle *Cycle `json:"cycle,omitempty"`
}

// JoinLimit bounds a join's JSON, in bytes, so that a worker's result stays a line its
// parent reads and a shard's document stays a file: past it, the largest pieces are left
// out, and the figures that needed them are marked inexact rather than silently wrong. A
// part's in-flight messages are bounded by its publishers' windows, its received sets by
// the streams it holds of other parts' publishers.
const JoinLimit = 16 << 20

// Seal bounds j to JoinLimit and returns it, or nil when it holds nothing.
func (j *Join) Seal() *Join {
	if j == nil {
		return nil
	}
	j.bound(JoinLimit)
	if len(j.Ends)+len(j.Streams)+len(j.Shares)+len(j.Silent) == 0 && j.Omitted == "" {
		return nil
	}
	return j
}

// Prune returns what of j parts outside this one still need, sealed: the ends and share
// groups of publishers with receivers outside (outside), the streams of publishers that
// run outside (publishes false). It is for a part made of parts (the worker processes of a
// shard), whose joins Merge joined.
func (j *Join) Prune(publishes, outside func(pub uint32) bool) *Join {
	if j == nil {
		return nil
	}
	out := &Join{Omitted: j.Omitted}
	for _, e := range j.Ends {
		if outside(e.Publisher) {
			out.Ends = append(out.Ends, e)
		}
	}
	for _, s := range j.Streams {
		if !publishes(s.Publisher) {
			out.Streams = append(out.Streams, s)
		}
	}
	for _, s := range j.Shares {
		if outside(s.Publisher) {
			out.Shares = append(out.Shares, s)
		}
	}
	for _, s := range j.Silent {
		if outside(s.Publisher) {
			out.Silent = append(out.Silent, s)
		}
	}
	return out.Seal()
}

// bound leaves out j's largest pieces until its JSON is within limit bytes, and says so.
func (j *Join) bound(limit int) {
	type piece struct{ kind, i, size int }
	var ps []piece
	total := 0
	add := func(kind, i, size int) {
		ps = append(ps, piece{kind, i, size})
		total += size
	}
	for i, e := range j.Ends {
		n := 64
		for k, s := range e.Seqs {
			n += digits(s) + 2
			if k < len(e.Got) {
				n += len(fmt.Sprint(e.Got[k]))
			}
		}
		add(0, i, n)
	}
	for i, s := range j.Streams {
		add(1, i, s.Cover.jsonSize()+40+s.Cycle.jsonSize())
	}
	for i, s := range j.Shares {
		add(2, i, s.Seqs.jsonSize()+50+s.Cycle.jsonSize())
	}
	for i, s := range j.Silent {
		add(3, i, len(s.ClientID)+len(s.Topic)+80)
	}
	if total <= limit {
		return
	}
	slices.SortStableFunc(ps, func(a, b piece) int { return cmp.Compare(b.size, a.size) })
	drop := [4]map[int]bool{{}, {}, {}, {}}
	for _, p := range ps {
		if total <= limit {
			break
		}
		drop[p.kind][p.i] = true
		total -= p.size
	}
	j.Ends = without(j.Ends, drop[0])
	j.Streams = without(j.Streams, drop[1])
	j.Shares = without(j.Shares, drop[2])
	j.Silent = without(j.Silent, drop[3])
	var left []string
	for k, what := range []string{"in-flight lists", "received-stream summaries", "share-group sets", "silent-publisher candidates"} {
		if n := len(drop[k]); n > 0 {
			left = append(left, fmt.Sprintf("%d %s", n, what))
		}
	}
	bound := fmt.Sprintf("%d-byte", limit)
	if limit%(1<<20) == 0 {
		bound = fmt.Sprintf("%d MiB", limit>>20)
	}
	j.Omitted = joinNotes(j.Omitted, fmt.Sprintf("%s left out over the %s bound", strings.Join(left, ", "), bound))
}

// without returns list without the indexes in drop.
func without[T any](list []T, drop map[int]bool) []T {
	if len(drop) == 0 {
		return list
	}
	var out []T
	for i, x := range list {
		if !drop[i] {
			out = append(out, x)
		}
	}
	return out
}

func joinNotes(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

// shareID names a share group's stream of one publisher.
type shareID struct {
	share int
	pub   uint32
}

// joinParts joins the parts' joins (nil: a part that left none) and adds the corrections
// to total, the sum of the parts' snapshots: share-group copies that reached members in
// several parts are duplicates, not received; copies of in-flight messages that arrived in
// another part are received, not in flight. It returns what the joined parts leave for
// parts outside them (the joins' pieces, joined, and the ends not yet complete).
func joinParts(total *Snapshot, js []*Join, ga groupAttribution) *Join {
	out := &Join{}
	partShares := make([]map[shareID]Seqs, len(js))
	byShare := map[shareID][]Seqs{}
	shareCycle := map[shareID]*Cycle{} // a share group's numbering (nil: the sequence numbers)
	// publisher -> (part, numbering) -> cover: the streams of a publisher that cycles over
	// topics number its messages their own way (Cycle), each way its own cover.
	covers := map[uint32]map[coverID]Cover{}
	cycles := map[string]*Cycle{}
	for i, j := range js {
		if j == nil {
			continue
		}
		out.Omitted = joinNotes(out.Omitted, j.Omitted)
		partShares[i] = map[shareID]Seqs{}
		for _, s := range j.Shares {
			id := shareID{s.Share, s.Publisher}
			partShares[i][id] = UnionSeqs(partShares[i][id], s.Seqs)
			byShare[id] = append(byShare[id], s.Seqs)
			if s.Cycle != nil {
				shareCycle[id] = s.Cycle
			}
		}
		for _, s := range j.Streams {
			if covers[s.Publisher] == nil {
				covers[s.Publisher] = map[coverID]Cover{}
			}
			id := coverID{i, s.Cycle.Key()}
			cycles[id.cycle] = s.Cycle
			covers[s.Publisher][id] = addCovers(covers[s.Publisher][id], s.Cover)
		}
	}
	// A share group's copies are its members' union; what members in several parts
	// received is counted once.
	union := map[shareID]Seqs{}
	sharesOf := map[uint32][]shareID{}
	ids := slices.SortedFunc(maps.Keys(byShare), func(a, b shareID) int {
		return cmp.Or(cmp.Compare(a.pub, b.pub), cmp.Compare(a.share, b.share))
	})
	var extra, shared int64         // copies to members in a second part; the groups' copies
	gExtra := map[*Snapshot]int64{} // extra by the publisher's group (a mixed run)
	for _, id := range ids {
		sets := byShare[id]
		u := UnionSeqs(sets...)
		var n int64
		for _, s := range sets {
			n += s.Len()
		}
		extra += n - u.Len()
		shared += u.Len()
		total.Received -= n - u.Len()
		if g := group(total, ga.ofPublisher(id.pub)); g != nil {
			gExtra[g] += n - u.Len()
			g.Received -= n - u.Len()
		}
		if g := group(total, ga.ofShare(id.share)); g != nil {
			g.Delivered -= n - u.Len()
		}
		union[id] = u
		sharesOf[id.pub] = append(sharesOf[id.pub], id)
		out.Shares = append(out.Shares, JoinShare{Share: id.share, Publisher: id.pub, Seqs: u, Cycle: shareCycle[id]})
	}
	// As a part's recorder does: a broker that gave at least every other copy to several
	// members (or that a part found so) does not share, and the extra copies are not expected.
	if extra > 0 && (total.Behaviour[BehaviourEveryMember] > 0 || extra*2 >= shared) {
		if total.Unexpected == nil {
			total.Unexpected = map[string]int64{}
		}
		if total.Behaviour == nil {
			total.Behaviour = map[string]int64{}
		}
		total.Unexpected["not_expected"] += extra
		total.Behaviour[BehaviourEveryMember] += extra
		for g, n := range gExtra { // a group's extra copies count as the run's do
			if n > 0 {
				if g.Unexpected == nil {
					g.Unexpected = map[string]int64{}
				}
				g.Unexpected["not_expected"] += n
			}
		}
	} else {
		total.Duplicated += extra
		for g, n := range gExtra {
			g.Duplicated += n
		}
	}
	// Each in-flight message: the copies its part saw, and the other parts' streams.
	for i, j := range js {
		if j == nil {
			continue
		}
		for _, e := range j.Ends {
			rest := JoinEnd{Publisher: e.Publisher, Receivers: e.Receivers, Dropped: e.Dropped}
			var delta int64
			for k, s := range e.Seqs {
				var had int64
				if k < len(e.Got) {
					had = e.Got[k]
				}
				got := had
				for cid, c := range covers[e.Publisher] {
					if n, ok := cycles[cid.cycle].Index(s); ok && cid.part != i {
						got += c.At(n)
					}
				}
				for _, id := range sharesOf[e.Publisher] {
					if n, ok := shareCycle[id].Index(s); ok && union[id].Has(n) && !partShares[i][id].Has(n) {
						got++
					}
				}
				delta += max(e.Receivers-got, 0) - max(e.Receivers-had, 0)
				if got < e.Receivers {
					rest.Seqs = append(rest.Seqs, s)
					rest.Got = append(rest.Got, got)
				}
			}
			g := group(total, ga.ofPublisher(e.Publisher))
			if e.Dropped {
				total.InFlightLost += delta
				if g != nil {
					g.InFlightLost += delta
				}
			} else {
				total.InFlightAtEnd += delta
				if g != nil {
					g.InFlightAtEnd += delta
				}
			}
			if len(rest.Seqs) > 0 {
				out.Ends = append(out.Ends, rest)
			}
		}
	}
	for _, pub := range slices.Sorted(maps.Keys(covers)) {
		byCycle := map[string]Cover{}
		for _, cid := range slices.SortedFunc(maps.Keys(covers[pub]), func(a, b coverID) int {
			return cmp.Or(cmp.Compare(a.part, b.part), cmp.Compare(a.cycle, b.cycle))
		}) {
			byCycle[cid.cycle] = addCovers(byCycle[cid.cycle], covers[pub][cid])
		}
		for _, k := range slices.Sorted(maps.Keys(byCycle)) {
			out.Streams = append(out.Streams, JoinStreams{Publisher: pub, Cover: byCycle[k], Cycle: cycles[k]})
		}
	}
	return out
}

// coverID names the cover of a part's streams of one publisher that number its messages
// one way (Cycle.Key).
type coverID struct {
	part  int
	cycle string
}
