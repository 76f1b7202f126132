package report

import (
	"fmt"
	"strings"

	"github.com/mqblast/mqblast/internal/termtext"
	"github.com/mqblast/mqblast/result"
)

// SilentLine is the headline of a run whose loss is confined to some publishers
// (result.SilentPublishers.Confined), without its key (LOST): how many copies of how many
// publishers, the first ones named with their topics, the run's failed connections and
// refused subscriptions (a receiver missing), the loss of the others, and the rule; ""
// when the loss is not confined.
func SilentLine(r *result.Result) string {
	m := &r.Messages
	sp := m.Silent
	if sp == nil || !sp.Confined {
		return ""
	}
	var names []string
	for _, e := range sp.Examples {
		names = append(names, termtext.Line(e.ClientID)+" on "+termtext.Line(e.Topic))
	}
	if more := sp.Publishers - int64(len(sp.Examples)); more > 0 {
		names = append(names, fmt.Sprintf("%d more", more))
	}
	line := fmt.Sprintf("all %d copies of %d of %d publishers (%s), their connections healthy: a broker ACL or a silent drop?",
		sp.Copies, sp.Publishers, sp.Of, strings.Join(names, ", "))
	if named := len(sp.Examples); sp.MoreTopics || len(sp.Topics) > named {
		topics := make([]string, len(sp.Topics))
		for i, t := range sp.Topics {
			topics[i] = termtext.Line(t)
		}
		if sp.MoreTopics {
			topics = append(topics, "more")
		}
		line += " Their topics: " + strings.Join(topics, ", ") + "."
	}
	c := &r.Connections
	if n := c.Failed + c.Dropped; n > 0 || m.SubscribeFailed > 0 {
		line += fmt.Sprintf(" %d connections of the run failed or dropped and %d subscriptions were refused: a receiver missing may explain it.", n, m.SubscribeFailed)
	}
	if other := m.Lost - sp.Copies; other > 0 {
		line += fmt.Sprintf(" The other publishers lost %d copies.", other)
	}
	if sp.NotJudged > 0 {
		line += " " + notJudged(sp.NotJudged)
	}
	return line + " (" + result.LossConfinedRule + ")"
}

// NotJudgedLine says, of a run with lost copies whose loss is not found confined, that
// publishers of some of its parts were not judged (result.SilentPublishers.NotJudged); ""
// when every publisher was.
func NotJudgedLine(m *result.Messages) string {
	sp := m.Silent
	if sp == nil || sp.Confined || sp.NotJudged == 0 || m.Lost == 0 {
		return ""
	}
	return notJudged(sp.NotJudged) + " Whether the loss is confined to some publishers is judged per process or shard: run in one process to judge them all."
}

func notJudged(n int64) string {
	return fmt.Sprintf("not judged: %d publishers with receivers in another process or shard, none of whose copies arrived in their own.", n)
}
