package result

import "slices"

// Group is one client group's figures in the document of a mixed run (a scenario with
// groups): the same sections as the run's, so that what reads the run's reads a group's.
// Connections are those of the group's clients. Messages and latency are those of the
// messages the group's clients published, wherever they arrived (expected, received, lost
// and the in-flight figures of its streams): the accounting identities hold per group, and
// the groups' figures add up to the run's. Delivered counts the copies the group's own
// clients received (a backend group's intake).
type Group struct {
	Name       string   `json:"name"`
	Behaviours []string `json:"behaviours,omitempty"`
	Clients    int      `json:"clients"`    // in this run (or part of a run)
	Publishers int      `json:"publishers"` // of Clients, those that publish
	// Numbers are the publisher numbers of the group's publishers in the whole run (the
	// measurement header's), [from, to); Shares the share indices of the share groups it
	// receives through (result.Join's). With them, what a merge finds across parts (a
	// share group's copies seen in two parts, the fate of messages in flight) is
	// attributed to the groups too.
	Numbers     [2]uint32   `json:"numbers,omitzero"`
	Shares      []int       `json:"shares,omitempty"`
	Connections Connections `json:"connections"`
	Messages    Messages    `json:"messages"`
	Delivered   int64       `json:"delivered"`
	// DeliveredOnReturn are the copies of Delivered that reached the group's clients after
	// they reconnected and were due before: what their sessions kept while they were away.
	DeliveredOnReturn int64       `json:"delivered_on_return,omitempty"`
	LatencyUS         Percentiles `json:"latency_us"`
	// Churn is the group's reconnect storm, if it has one; its reconnects and their
	// latency are in Connections (reconnected, reconnect_latency_us).
	Churn *Churn `json:"churn,omitempty"`
	// Snapshot is the group's additive figures, which merge (MergeParts); the sections
	// above are derived from it.
	Snapshot *Snapshot `json:"snapshot"`
}

// Churn is a group's reconnect storm: when it came, how long its clients stayed away, whether its clients came back with a
// clean session, how many of them it was to take and how many connections it ended (those
// of its clients that were connected then).
type Churn struct {
	AtS     float64 `json:"at_s"` // from the start of publishing
	DownS   float64 `json:"down_s,omitempty"`
	Clean   bool    `json:"clean_session"`
	Clients int     `json:"clients"`
	Ended   int64   `json:"ended"`
	// RatePerS, when above 0, is steady churn: from AtS to the end of the duration, that
	// many of the Clients per second dropped and came back; Ended counts them all.
	RatePerS float64 `json:"rate_per_s,omitempty"`
}

// GroupInfo names a group of a run before it has figures (bench fills it from the plan).
type GroupInfo struct {
	Name       string
	Behaviours []string
	Clients    int
	Publishers int
	Numbers    [2]uint32 // publisher numbers [from, to) in the whole run
	Shares     []int     // share indices it receives through
}

// SetGroups gives r one empty group per info, in order: SetTotal then fills their
// figures from the total's per-group snapshots.
func (r *Result) SetGroups(infos []GroupInfo) {
	r.Groups = make([]Group, len(infos))
	for i, in := range infos {
		r.Groups[i] = Group{Name: in.Name, Behaviours: in.Behaviours, Clients: in.Clients, Publishers: in.Publishers,
			Numbers: in.Numbers, Shares: in.Shares}
	}
}

// setGroups derives each group's sections from total.Groups.
func (r *Result) setGroups(total *Snapshot) {
	for i := range r.Groups {
		g := &r.Groups[i]
		s := NewSnapshot()
		if i < len(total.Groups) && total.Groups[i] != nil {
			s = total.Groups[i]
		}
		var one Result
		one.Messages.ExpectedUnknown = r.Messages.ExpectedUnknown
		one.owing = total.OwedArrivalPerS > 0 // the drain judges the run's arrivals
		one.SetTotal(s)
		g.Connections, g.Messages, g.LatencyUS = one.Connections, one.Messages, one.LatencyUS
		g.Connections.Target = g.Clients
		g.Delivered, g.DeliveredOnReturn = s.Delivered, s.DeliveredOnReturn
		g.Messages.DeliveredOnReturn = 0 // a receiving figure: the group's, not its messages'
		g.Snapshot = s
	}
}

// GroupInterval is one group's figures over an interval of a mixed run, counted as the
// group's figures of the run are (Group): connections of its clients, messages of its
// publishers wherever they arrived, Delivered to its clients.
type GroupInterval struct {
	Connected   int64       `json:"connected"`
	Reconnected int64       `json:"reconnected"`
	Failed      int64       `json:"failed"`
	Dropped     int64       `json:"dropped"`
	Published   int64       `json:"published"`
	Unsent      int64       `json:"unsent"`
	Expected    int64       `json:"expected"`
	Received    int64       `json:"received"`
	Delivered   int64       `json:"delivered"`
	PublishPerS float64     `json:"publish_per_s"`
	ReceivePerS float64     `json:"receive_per_s"`
	LatencyUS   Percentiles `json:"latency_us"`
	// Latency is the interval's latency histogram (packed), so that parts' intervals merge.
	Latency *Hist `json:"latency,omitempty"`
}

// newGroupIntervals makes the group records of an interval from its snapshot's groups, and
// packs their histograms.
func newGroupIntervals(s *Snapshot, secs float64) []GroupInterval {
	if len(s.Groups) == 0 {
		return nil
	}
	out := make([]GroupInterval, len(s.Groups))
	for i, g := range s.Groups {
		if g == nil {
			continue
		}
		lat := g.Latency.Summary()
		// An interval's histograms are kept, or encoded and dropped (a worker's): packed, a
		// group's counts (25 KB) go back to the pool for the next interval, not to the
		// collector, and its JSON is the packed form, not another encoding.
		g.Pack()
		out[i] = GroupInterval{Connected: g.Connected, Reconnected: g.Reconnected, Failed: g.FailedTotal(), Dropped: g.DroppedTotal(),
			Published: g.Published, Unsent: g.UnsentTotal(), Expected: g.Expected, Received: g.Received, Delivered: g.Delivered,
			PublishPerS: float64(g.Published) / secs, ReceivePerS: float64(g.Received) / secs, LatencyUS: lat}
		out[i].Latency = g.Latency.packedCopy()
	}
	return out
}

// mergeGroupIntervals adds the group records o into dst (one of mergeIntervals' own).
func mergeGroupIntervals(dst []GroupInterval, o []GroupInterval) []GroupInterval {
	for i, g := range o {
		if i >= len(dst) {
			g.Latency = cloneHist(g.Latency)
			dst = append(dst, g)
			continue
		}
		d := &dst[i]
		d.Connected += g.Connected
		d.Reconnected += g.Reconnected
		d.Failed += g.Failed
		d.Dropped += g.Dropped
		d.Published += g.Published
		d.Unsent += g.Unsent
		d.Expected += g.Expected
		d.Received += g.Received
		d.Delivered += g.Delivered
		d.PublishPerS += g.PublishPerS
		d.ReceivePerS += g.ReceivePerS
		d.Latency = mergeHist(d.Latency, g.Latency)
		d.LatencyUS = d.Latency.Summary()
	}
	return dst
}

// groupAttribution finds the groups of publishers and share groups in gs, for a merge.
type groupAttribution struct{ gs []Group }

// ofPublisher returns the index of the group whose publishers include number pub, -1 if
// none.
func (a groupAttribution) ofPublisher(pub uint32) int {
	for i := range a.gs {
		if n := a.gs[i].Numbers; pub >= n[0] && pub < n[1] {
			return i
		}
	}
	return -1
}

// ofShare returns the index of the group that receives through share group share, -1 if
// none.
func (a groupAttribution) ofShare(share int) int {
	for i := range a.gs {
		if slices.Contains(a.gs[i].Shares, share) {
			return i
		}
	}
	return -1
}

// group returns total's snapshot of group i, nil when it has none.
func group(total *Snapshot, i int) *Snapshot {
	if i < 0 || i >= len(total.Groups) || total.Groups[i] == nil {
		return nil
	}
	return total.Groups[i]
}

// GroupMeasurement is where a publishing group's messages carried their measurement.
type GroupMeasurement struct {
	Group string `json:"group"`
	// Carrier is "header" (the binary measurement bytes start the payload), "mark" (the
	// text mark its payload template places) or "none" (unmeasured: its copies counted as
	// unmeasured, none expected).
	Carrier string `json:"carrier"`
	// Payload is what follows or holds the measurement: "fill", "literal", "template" or
	// "file".
	Payload string `json:"payload"`
}
