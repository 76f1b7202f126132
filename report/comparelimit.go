package report

import (
	"github.com/mqblast/mqblast/internal/termtext"
	"github.com/mqblast/mqblast/result"
)

// limitKind is what a search found; a document written before limit.kind says so by its
// vary.
func limitKind(l *result.Limit) string {
	switch {
	case l.Kind != "":
		return l.Kind
	case l.Connect():
		return result.KindConnectRate
	}
	return result.KindPublishRate
}

// limitRows are the comparison's rows of limit searches (mqblast limit), when any input is
// one: what each searched, what it sustained and where it failed (in its unit), who set
// the limit and, for a count, what each connection cost the broker. The sustained figure
// of searches of one kind is marked where it is the best; figures of different kinds are
// not compared.
func limitRows(in []Input) (rows [][]string, marks [][]bool) {
	kinds := map[string]bool{}
	cost := false
	for _, x := range in {
		if l := x.Result.Limit; l != nil {
			kinds[limitKind(l)] = true
			cost = cost || l.BrokerRSSPerConnBytes != 0
		}
	}
	if len(kinds) == 0 {
		return nil, nil
	}
	row := func(name string, f func(l *result.Limit) string) {
		r := []string{name}
		for _, x := range in {
			if l := x.Result.Limit; l != nil {
				r = append(r, f(l))
			} else {
				r = append(r, "–")
			}
		}
		rows, marks = append(rows, r), append(marks, make([]bool, len(r)))
	}
	row("limit kind", func(l *result.Limit) string { return termtext.Line(limitKind(l)) }) // the document's text
	row("limit sustained", func(l *result.Limit) string {
		switch {
		case !l.Found:
			return "none"
		case l.LowerBound:
			return RateText(l.Sustained) + " " + l.Unit() + " (lower bound)"
		}
		return RateText(l.Sustained) + " " + l.Unit()
	})
	if len(kinds) == 1 { // one kind: the highest sustained is the best
		best, n := 0.0, 0
		for _, x := range in {
			if l := x.Result.Limit; l != nil && l.Found {
				best, n = max(best, l.Sustained), n+1
			}
		}
		distinct := false
		for _, x := range in {
			if l := x.Result.Limit; l != nil && l.Found && l.Sustained != best {
				distinct = true
			}
		}
		for i, x := range in {
			if l := x.Result.Limit; n >= 2 && distinct && l != nil && l.Found && l.Sustained == best {
				marks[len(marks)-1][i+1] = true
			}
		}
	}
	row("limit first failed", func(l *result.Limit) string {
		if l.FirstFailed == 0 {
			return "none"
		}
		return RateText(l.FirstFailed) + " " + l.Unit()
	})
	row("limit limited by", func(l *result.Limit) string { return cmpOr(termtext.Line(l.LimitedBy), "–") })
	if cost {
		row("limit broker rss per connection", func(l *result.Limit) string {
			if l.BrokerRSSPerConnBytes == 0 {
				return "–"
			}
			return bytesText(l.BrokerRSSPerConnBytes)
		})
	}
	return rows, marks
}
