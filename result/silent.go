package result

import "slices"

// Silent publishers (SilentPublishers).
const (
	// SilentMinCopies is the fewest expected copies of a publisher's messages that, all
	// lost, make it a silent publisher: random loss takes every one of ten copies
	// of one publisher only when it takes most copies of every publisher.
	SilentMinCopies = 10
	// SilentNamed bounds the publishers and the topics LossConfined names.
	SilentNamed = 5
)

// SilentPublishers are the publishers of a run that lost every copy of their messages (at
// least SilentMinCopies expected, none received by any subscriber) while their own
// connections stayed up (never dropped, never reconnected): the silent publishers, and
// whether the run's loss is confined to them. A broker does that when it drops what a
// publisher may not publish without a word: an ACL at QoS 0, and at QoS 1 under MQTT 3.1.1
// (Mosquitto acknowledges such a message and delivers it to nobody). Present when the run
// had publishers with expected copies.
type SilentPublishers struct {
	// Confined says that the run's loss is confined to the silent publishers: copies of
	// other publishers arrived, and the silent publishers' copies are at least half of the
	// run's lost copies (LossConfinedRule).
	Confined bool `json:"confined"`
	// Publishers are the silent publishers, Copies their expected copies (every one lost).
	Publishers int64 `json:"publishers"`
	Copies     int64 `json:"copies"`
	// Of are the publishers judged: those with expected copies whose every receiver ran in
	// the same process (or shard) as they did.
	Of int64 `json:"of"`
	// NotJudged are the publishers with expected copies whose receivers ran in another
	// process or shard of the run, none of whose copies arrived in their own: whether
	// they were silent is not known (the figures are per part for them).
	NotJudged int64 `json:"not_judged,omitempty"`
	// Examples name at most SilentNamed of the silent publishers; Publishers counts them all.
	Examples []SilentExample `json:"examples,omitempty"`
	// Topics are at most SilentNamed of the topics the silent publishers publish to;
	// MoreTopics says they publish to more.
	Topics     []string `json:"topics,omitempty"`
	MoreTopics bool     `json:"more_topics,omitempty"`
}

// SilentExample is a silent publisher: its client id, its topic and its expected copies.
type SilentExample struct {
	ClientID string `json:"client_id"`
	Topic    string `json:"topic"`
	Copies   int64  `json:"copies"`
}

// LossConfinedRule says when the loss of a run is confined to some publishers, in the
// words the summary, the report and the design use.
const LossConfinedRule = "loss is confined to publishers when some lost every copy of their messages " +
	"(at least 10 each, none received by any subscriber) while their connections stayed up, " +
	"copies of other publishers arrived, and theirs are at least half of the copies lost"

// confine sets Confined from the run's figures: copies of other publishers arrived (received
// is not 0) and the silent publishers' copies are at least half of lost.
func (sp *SilentPublishers) confine(received, lost int64) {
	if sp == nil {
		return
	}
	sp.Confined = sp.Publishers > 0 && received > 0 && lost > 0 && 2*sp.Copies >= lost
}

// AddSilent adds a silent publisher to sp, naming it while fewer than SilentNamed are named,
// and its topic while fewer than SilentNamed topics are (MoreTopics past that).
func (sp *SilentPublishers) AddSilent(p SilentExample) {
	sp.Publishers++
	sp.Copies += p.Copies
	if len(sp.Examples) < SilentNamed {
		sp.Examples = append(sp.Examples, p)
	}
	sp.addTopic(p.Topic)
}

func (sp *SilentPublishers) addTopic(t string) {
	switch {
	case slices.Contains(sp.Topics, t):
	case len(sp.Topics) < SilentNamed:
		sp.Topics = append(sp.Topics, t)
	default:
		sp.MoreTopics = true
	}
}

// mergeSilent adds the parts' SilentPublishers: their publishers are disjoint, so the
// counts add; the names are the first parts' up to the bound. Confined is set by SetTotal.
func mergeSilent(rs []*Result) *SilentPublishers {
	var out *SilentPublishers
	for _, r := range rs {
		sp := r.Messages.Silent
		if sp == nil {
			continue
		}
		if out == nil {
			out = &SilentPublishers{}
		}
		out.Publishers += sp.Publishers
		out.Copies += sp.Copies
		out.Of += sp.Of
		out.NotJudged += sp.NotJudged
		for _, e := range sp.Examples {
			if len(out.Examples) < SilentNamed {
				out.Examples = append(out.Examples, e)
			}
		}
		for _, t := range sp.Topics {
			out.addTopic(t)
		}
		out.MoreTopics = out.MoreTopics || sp.MoreTopics
	}
	return out
}

// joinSilent settles what it can of the merged parts' silent candidates (their joins'
// Silent) in sp, the parts' SilentPublishers added: a candidate of which another part
// received a copy is judged, not silent; the others go on in out, the merged join, for
// SettleSilent.
func joinSilent(sp *SilentPublishers, js []*Join, out *Join) {
	if sp == nil || out == nil {
		return
	}
	arrived := map[uint32]bool{}
	for _, j := range js {
		if j == nil {
			continue
		}
		for _, s := range j.Streams {
			if len(s.Cover) > 0 {
				arrived[s.Publisher] = true
			}
		}
		for _, s := range j.Shares {
			if len(s.Seqs) > 0 {
				arrived[s.Publisher] = true
			}
		}
	}
	for _, j := range js {
		if j == nil {
			continue
		}
		for _, c := range j.Silent {
			if arrived[c.Publisher] {
				sp.NotJudged--
				sp.Of++
				continue
			}
			out.Silent = append(out.Silent, c)
		}
	}
}

// SettleSilent settles the silent candidates left in r's join (Join.Silent) whose receivers
// all ran in the parts r is made of (outside false): no part received a copy of theirs, so
// they are silent publishers, named in Messages.Silent. Nothing is settled when the join
// left pieces out (Join.Omitted): a copy may have been in them.
func (r *Result) SettleSilent(outside func(pub uint32) bool) {
	j, sp := r.Join, r.Messages.Silent
	if j == nil || sp == nil || j.Omitted != "" || len(j.Silent) == 0 {
		return
	}
	var kept []JoinSilent
	for _, c := range j.Silent {
		if outside(c.Publisher) {
			kept = append(kept, c)
			continue
		}
		sp.NotJudged--
		sp.Of++
		sp.AddSilent(SilentExample{ClientID: c.ClientID, Topic: c.Topic, Copies: c.Copies})
	}
	j.Silent = kept
	sp.confine(r.Messages.Received, r.Messages.Lost)
}
