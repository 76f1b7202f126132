package watch

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/brokersys"
	"github.com/mqblast/mqblast/result"
)

// TestSysCounterWithoutBaseline: a counter the broker had not published before the run
// has no baseline: its total is left out and the counts are not compared, never taken as
// counted from 0 (the broker's whole life as the run's).
func TestSysCounterWithoutBaseline(t *testing.T) {
	t.Parallel()
	t0 := time.Now()
	end := t0.Add(5 * time.Second)
	val := func(n float64, at time.Time, seq int64) brokersys.Value {
		return brokersys.Value{Num: n, Numeric: true, At: at, Seq: seq}
	}
	first := brokersys.Reading{Read: 2, Latest: t0, Refreshed: t0, Version: "mosquitto version 2.0.11", Topics: map[string]brokersys.Value{
		brokersys.TopicUptime:      val(100, t0, 1),
		brokersys.TopicPublishSent: val(1000, t0, 2),
	}}
	at := end.Add(time.Second)
	last := brokersys.Reading{Read: 40, Latest: at, Refreshed: at, Version: first.Version, Topics: map[string]brokersys.Value{
		brokersys.TopicUptime:      val(106, at, 38),
		brokersys.TopicPublishRecv: val(272855, at, 39),
		brokersys.TopicPublishSent: val(1040, at, 40),
	}}
	s := &sysWatch{first: first, baseline: refreshed(&first)}
	b := s.result(&last, end)
	if _, ok := b.Total(result.SysPublishReceived); ok || b.Comparable ||
		!slices.ContainsFunc(b.Notes, func(n string) bool { return strings.Contains(n, "publish_received") }) {
		t.Errorf("broker_sys %+v", b)
	}
	if tx, _ := b.Total(result.SysPublishSent); tx != 40 {
		t.Errorf("publish_sent %d, want 40", tx)
	}
}

// TestSysRetainedBaseline: a first reading of retained values only (no refresh of the
// broker's came before the run) is no baseline: the counts are not compared.
func TestSysRetainedBaseline(t *testing.T) {
	t.Parallel()
	t0 := time.Now()
	end := t0.Add(5 * time.Second)
	ret := func(n float64, seq int64) brokersys.Value {
		return brokersys.Value{Num: n, Numeric: true, At: t0, Seq: seq, Retained: true}
	}
	first := brokersys.Reading{Read: 3, Latest: t0, Version: "mosquitto version 2.0.11", Topics: map[string]brokersys.Value{
		brokersys.TopicUptime: ret(100, 1), brokersys.TopicPublishRecv: ret(4, 2), brokersys.TopicPublishSent: ret(400, 3),
	}}
	at := end.Add(time.Second)
	last := brokersys.Reading{Read: 40, Latest: at, Refreshed: at, Version: first.Version, Topics: map[string]brokersys.Value{
		brokersys.TopicUptime:      {Num: 106, Numeric: true, At: at, Seq: 38},
		brokersys.TopicPublishRecv: {Num: 40, Numeric: true, At: at, Seq: 39},
		brokersys.TopicPublishSent: {Num: 4440, Numeric: true, At: at, Seq: 40},
	}}
	s := &sysWatch{first: first, baseline: refreshed(&first)}
	b := s.result(&last, end)
	if b.Comparable || !slices.Contains(b.Notes, result.SysNoteNoBaseline) {
		t.Errorf("broker_sys %+v", b)
	}
}
