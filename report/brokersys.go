package report

import (
	"fmt"
	"strings"

	"github.com/mqblast/mqblast/internal/countfmt"
	"github.com/mqblast/mqblast/internal/termtext"
	"github.com/mqblast/mqblast/result"
)

// brokerSysLines are the summary's lines about the broker's $SYS (--broker-sys): its
// counts beside mqblast's, then its notes. Every string of the broker's is escaped.
func brokerSysLines(r *result.Result) []string {
	b := r.BrokerSys
	if b == nil {
		return nil
	}
	src := termtext.Line(b.Source)
	if b.Read == 0 {
		line := result.SysNoteNone + " (" + src + ")"
		if b.Error != "" {
			line += ": " + termtext.Line(b.Error)
		}
		return []string{line}
	}
	n := countfmt.Thousands
	m := &r.Messages
	mq := fmt.Sprintf("mqblast: published %s, received %s", n(m.Published), n(m.Received))
	// The broker counts every PUBLISH it sent the run's clients, the copies mqblast does
	// not count as received too.
	other := m.Duplicated + m.Redelivered + m.RetainedAgain + m.UnexpectedTotal + m.Unmeasured
	if other > 0 {
		mq += fmt.Sprintf(" and %s other copies (duplicated, redelivered, retained again, unexpected, unmeasured)", n(other))
	}
	var parts []string
	prx, okRx := b.Total(result.SysPublishReceived)
	ptx, okTx := b.Total(result.SysPublishSent)
	switch {
	case okRx && okTx:
		sent := ptx - b.ReadCounted
		s := fmt.Sprintf("received %s publish / sent %s (%s)", n(prx), n(sent), mq)
		if b.Comparable {
			var diff []string
			if d := prx - m.Published; d != 0 {
				diff = append(diff, fmt.Sprintf("%+d received", d))
			}
			if d := sent - m.Received - other; d != 0 {
				diff = append(diff, fmt.Sprintf("%+d sent", d))
			}
			if len(diff) == 0 {
				s += ", they agree"
			} else {
				s += ", they differ: broker minus mqblast " + strings.Join(diff, ", ")
			}
		}
		parts = append(parts, s)
		if d, ok := b.Total(result.SysPublishDropped); ok && d > 0 {
			parts = append(parts, fmt.Sprintf("THE BROKER DROPPED %s publish by its own policy (a subscriber's queue was full: max_queued_messages)", n(d)))
		}
		if b.ReadCounted > 0 {
			parts = append(parts, fmt.Sprintf("its %s $SYS messages to mqblast's reader left out of sent", n(b.ReadCounted)))
		}
	default:
		if rx, ok := b.Total(result.SysMessagesReceived); ok {
			tx, _ := b.Total(result.SysMessagesSent)
			parts = append(parts, fmt.Sprintf("messages received %s / sent %s as the broker counts them (%s)", n(rx), n(tx), mq))
		}
	}
	if b.ClientsConnectedMax > 0 {
		parts = append(parts, fmt.Sprintf("clients connected max %s (the reader included)", n(b.ClientsConnectedMax)))
	}
	if rx, ok := b.Total(result.SysBytesReceived); ok {
		tx, _ := b.Total(result.SysBytesSent)
		parts = append(parts, fmt.Sprintf("bytes received %s / sent %s", n(rx), n(tx)))
	}
	if rx, ok := b.Load["publish/received/1min"]; ok {
		parts = append(parts, fmt.Sprintf("load 1min: publish received %.0f, sent %.0f per minute (the broker's moving average)", rx, b.Load["publish/sent/1min"]))
	}
	ver := "version not published"
	if b.Version != "" {
		ver = termtext.Line(b.Version)
	}
	how := fmt.Sprintf("%s at %s", ver, src)
	if b.RefreshS > 0 {
		how += fmt.Sprintf(", refreshed every %.0fs", b.RefreshS)
	}
	lines := []string{strings.Join(parts, ", ") + "; " + how}
	for _, note := range b.Notes {
		lines = append(lines, "note: "+termtext.Line(note))
	}
	if b.Error != "" && b.Gaps > 0 {
		lines = append(lines, "reader's last error: "+termtext.Line(b.Error))
	}
	return lines
}
