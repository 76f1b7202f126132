package watch

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/mqblast/mqblast/internal/brokersys"
	"github.com/mqblast/mqblast/result"
)

// sysCounters are the broker's counters the result carries, by result key: the $SYS
// topics that hold each, in order of preference (mochi-mqtt publishes its byte totals
// under load/).
var sysCounters = []struct {
	key    string
	topics []string
}{
	{result.SysPublishReceived, []string{brokersys.TopicPublishRecv}},
	{result.SysPublishSent, []string{brokersys.TopicPublishSent}},
	{result.SysPublishDropped, []string{brokersys.TopicPublishDropped}},
	{result.SysMessagesReceived, []string{brokersys.TopicMessagesRecv}},
	{result.SysMessagesSent, []string{brokersys.TopicMessagesSent}},
	{result.SysBytesReceived, []string{brokersys.TopicBytesRecv, brokersys.TopicLoadPrefix + "bytes/received"}},
	{result.SysBytesSent, []string{brokersys.TopicBytesSent, brokersys.TopicLoadPrefix + "bytes/sent"}},
}

// Without a refresh spacing seen, the end waits for Mosquitto's default sys_interval
// (10 s) twice, and a second.
const sysDefaultWait = 21 * time.Second

// sysWatch is the Watch's reader of the broker's $SYS (--broker-sys).
type sysWatch struct {
	rd          *brokersys.Reader
	qos2        bool
	progress    io.Writer
	first, prev brokersys.Reading
	last        map[string]brokersys.Value // each counter's value where its rate was last taken
	rate        map[string]float64
	clientsMax  int64
	closed      bool
	// baseline says first holds a refresh the broker made after the reader subscribed:
	// its counters as they were before the run, not retained values that may be older
	// than its counts.
	baseline bool
}

// ReadBrokerSys has the watch record the broker's $SYS figures from rd, which it closes
// when the run finishes (Finish) or at Close; qos2 says the run uses QoS 2, which some
// brokers leave out of their counters. Call it before Start.
func (w *Watch) ReadBrokerSys(rd *brokersys.Reader, qos2 bool) {
	w.sys = &sysWatch{rd: rd, qos2: qos2, last: map[string]brokersys.Value{}, rate: map[string]float64{}}
}

// Close closes the $SYS reader if the run did not finish (an error before Finish).
func (w *Watch) Close() {
	if s := w.sys; s != nil && !s.closed {
		s.closed = true
		s.rd.Close()
	}
}

// WaitSysRefresh waits, up to twice the broker's default refresh spacing, for the
// broker's first $SYS refresh after the reader subscribed, saying so on progress: what
// the reader had then are retained values, which the broker computed at its last
// refresh, maybe before the last messages of an earlier run. Call it after
// ReadBrokerSys, before the run's first socket: the counters of that refresh are the
// run's baseline. It returns at once when the reader has read nothing.
func (w *Watch) WaitSysRefresh(progress io.Writer) {
	s := w.sys
	if s == nil || s.rd.Snapshot().Read == 0 {
		return
	}
	start := time.Now()
	fmt.Fprintf(progress, "broker $SYS: waiting up to %v for the broker's next refresh (its sys_interval): its counters before the run\n",
		sysDefaultWait.Round(time.Second))
	r := s.rd.WaitRefresh(time.Time{}, sysDefaultWait)
	if !refreshed(&r) {
		fmt.Fprintf(progress, "broker $SYS: no refresh came within %v: its counters are not compared\n", sysDefaultWait.Round(time.Second))
		return
	}
	fmt.Fprintf(progress, "broker $SYS: refreshed after %v\n", time.Since(start).Round(100*time.Millisecond))
}

// refreshed says r holds a refresh the broker made while the reader was subscribed.
func refreshed(r *brokersys.Reading) bool {
	if u, ok := r.Topics[brokersys.TopicUptime]; ok {
		return !u.Retained
	}
	return !r.Refreshed.IsZero()
}

// sysStart takes the first reading: the broker's counters before the run.
func (w *Watch) sysStart() {
	s := w.sys
	if s == nil {
		return
	}
	s.first = s.rd.Snapshot()
	s.baseline = refreshed(&s.first)
	s.prev = s.first
	s.clients(&s.first)
}

func (s *sysWatch) clients(r *brokersys.Reading) int64 {
	c, ok := r.Num(brokersys.TopicClientsConnect)
	if !ok {
		return 0
	}
	s.clientsMax = max(s.clientsMax, int64(c))
	return int64(c)
}

// pick returns the first of topics that r holds as a number.
func pick(r *brokersys.Reading, topics []string) (brokersys.Value, bool) {
	for _, t := range topics {
		if v, ok := r.Topics[t]; ok && v.Numeric {
			return v, true
		}
	}
	return brokersys.Value{}, false
}

// sysInterval fills iv's $SYS figures: each counter's rate over the broker's latest
// refresh that moved it (0 when a refresh left it as it was), the clients it counts, and
// the age of its latest message.
func (w *Watch) sysInterval(iv *result.Interval, progress io.Writer) {
	s := w.sys
	if s == nil {
		return
	}
	s.progress = progress
	cur := s.rd.Snapshot()
	defer func() { s.prev = cur }()
	if cur.Read == 0 {
		return
	}
	refreshed := cur.Read > s.prev.Read
	if u, ok := cur.Topics[brokersys.TopicUptime]; ok {
		refreshed = u.Seq != s.prev.Topics[brokersys.TopicUptime].Seq
	}
	ib := &result.IntervalBrokerSys{AgeS: max(time.Since(cur.Latest).Seconds(), 0), ClientsConnected: s.clients(&cur)}
	for _, c := range sysCounters {
		v, ok := pick(&cur, c.topics)
		if !ok {
			continue
		}
		old, had := s.last[c.key]
		if !had {
			old, had = pick(&s.first, c.topics)
		}
		switch {
		case had && v.Seq == old.Seq:
			if refreshed { // refreshed, and this counter did not move
				s.rate[c.key] = 0
			}
		case had && v.At.After(old.At) && v.Num >= old.Num:
			s.rate[c.key] = (v.Num - old.Num) / v.At.Sub(old.At).Seconds()
			s.last[c.key] = v
		default:
			s.last[c.key] = v
		}
		if r, ok := s.rate[c.key]; ok {
			if ib.PerS == nil {
				ib.PerS = map[string]float64{}
			}
			ib.PerS[c.key] = r
		}
	}
	iv.BrokerSys = ib
}

// sysFinish waits, up to twice the broker's refresh spacing, for its first $SYS refresh
// after the run's end, so that its counters hold the drain's last messages; then it
// closes the reader and fills the result's broker_sys.
func (w *Watch) sysFinish(res *result.Result) {
	s := w.sys
	if s == nil || s.closed {
		return
	}
	end := time.Now()
	wait := sysDefaultWait
	if r := s.prev.Refresh; r > 0 {
		wait = 2*r + time.Second
	}
	if s.prev.Read > 0 && s.progress != nil {
		fmt.Fprintf(s.progress, "broker $SYS: waiting up to %v for the broker's next refresh (its sys_interval)\n", wait.Round(time.Second))
	}
	last := s.rd.WaitRefresh(end, wait)
	s.closed = true
	s.rd.Close()
	s.clients(&last)
	res.BrokerSys = s.result(&last, end)
	res.NoteBrokerDrops()
}

// counted is how many of the reader's own $SYS messages a broker that counts them as
// sent (Mosquitto) counted between the values v0 and v1 of its sent counter. A refresh
// reads the counter when it publishes it, after the messages before it in the stream
// were sent; a retained value (or none: the counter had not moved) was read before the
// reader subscribed. So a value at place p in the stream counts the p-1 messages before
// it, a retained one none of them.
func counted(v0, v1 brokersys.Value) int64 {
	base := v0.Seq
	if v0.Seq == 0 || v0.Retained {
		base = 1
	}
	return v1.Seq - base
}

// result is the broker's $SYS over the run, from the first reading to last.
func (s *sysWatch) result(last *brokersys.Reading, end time.Time) *result.BrokerSys {
	b := &result.BrokerSys{Source: last.Addr, Version: last.Version, Read: last.Read,
		ClientsConnectedMax: s.clientsMax, RefreshS: last.Refresh.Seconds(), Gaps: last.Gaps, Error: last.Err}
	if last.Read == 0 {
		b.Notes = append(b.Notes, result.SysNoteNone)
		return b
	}
	for t := range last.Topics {
		b.Topics = append(b.Topics, t)
	}
	slices.Sort(b.Topics)
	if u, ok := last.Topics[brokersys.TopicUptime]; ok {
		b.Fresh = u.At.After(end)
	} else {
		b.Fresh = last.Latest.After(end)
	}
	used := map[string]bool{}
	restarted := false
	var unknown []string // counters without a value before the run
	for _, c := range sysCounters {
		v1, ok := pick(last, c.topics)
		if !ok {
			continue
		}
		used[c.topics[0]], used[c.topics[len(c.topics)-1]] = true, true
		// A counter the broker had not published before the run has no baseline: taking
		// it as 0 would count the broker's whole life as the run's.
		v0, ok := pick(&s.first, c.topics)
		if !ok {
			unknown = append(unknown, c.key)
			continue
		}
		if v1.Num < v0.Num {
			restarted = true
			continue
		}
		if b.Totals == nil {
			b.Totals = map[string]int64{}
		}
		b.Totals[c.key] = int64(v1.Num - v0.Num)
		if c.key == result.SysPublishSent {
			b.ReadCounted = counted(v0, v1)
		}
	}
	for t, v := range last.Topics {
		if name, ok := strings.CutPrefix(t, brokersys.TopicLoadPrefix); ok && v.Numeric && !used[t] {
			if b.Load == nil {
				b.Load = map[string]float64{}
			}
			b.Load[name] = v.Num
		}
	}
	_, hasRx := b.Totals[result.SysPublishReceived]
	_, hasTx := b.Totals[result.SysPublishSent]
	hasPublish := hasRx && hasTx
	mosquitto := strings.HasPrefix(last.Version, "mosquitto")
	switch {
	case s.qos2 && mosquitto:
		b.Notes = append(b.Notes, result.SysNoteQoS2)
	case !hasPublish && len(unknown) == 0 && !restarted:
		b.Notes = append(b.Notes, "the broker publishes no $SYS/broker/publish/messages counters: its message counts are not compared with mqblast's")
	}
	if !s.baseline {
		b.Notes = append(b.Notes, result.SysNoteNoBaseline)
	}
	if len(unknown) > 0 {
		b.Notes = append(b.Notes, fmt.Sprintf("the broker published %s only during the run: without a value before it, the run's share is not known and is left out", strings.Join(unknown, ", ")))
	}
	if !b.Fresh {
		b.Notes = append(b.Notes, result.SysNoteStale)
	}
	if restarted {
		b.Notes = append(b.Notes, "some of the broker's $SYS counters went down: did it restart during the run? those totals are left out")
	}
	if last.Gaps > 0 {
		b.Notes = append(b.Notes, fmt.Sprintf("the $SYS reader's connection dropped %d times: the broker counted $SYS messages it did not read", last.Gaps))
	}
	b.Comparable = hasPublish && s.baseline && b.Fresh && !restarted && last.Gaps == 0 && (!s.qos2 || !mosquitto)
	return b
}
