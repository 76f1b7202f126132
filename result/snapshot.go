package result

// Snapshot is what one process measured over some span: counters and histograms that add
// exactly across loops, processes, hosts and shards (Add). Worker processes stream one per
// interval to their parent as a JSON line; a result keeps the whole run's (Result.Total),
// and its document shows it (SetTotal).
type Snapshot struct {
	Connected      int64             `json:"connected"`
	Reconnected    int64             `json:"reconnected"`
	Refused        map[string]int64  `json:"refused,omitempty"` // by reason
	Failed         map[string]int64  `json:"failed,omitempty"`  // by cause
	Dropped        map[string]int64  `json:"dropped,omitempty"` // by cause
	Pings          int64             `json:"pings"`
	Examples       map[string]string `json:"examples,omitempty"`
	ConnectLatency *Hist             `json:"connect_latency"`
	PingRTT        *Hist             `json:"ping_rtt"`
	// TLS and WebSocket set-up: TLS handshakes, their time and
	// the CPU they took (µs, summed), those resumed from a ticket; WebSocket upgrades.
	TLSHandshakes int64 `json:"tls_handshakes,omitempty"`
	TLSResumed    int64 `json:"tls_resumed,omitempty"`
	TLSCPUUS      int64 `json:"tls_cpu_us,omitempty"`
	TLSHandshake  *Hist `json:"tls_handshake"`
	WSUpgrade     *Hist `json:"ws_upgrade"`
	// CertsMinted counts the client certificates minted in TLS handshakes, CertMint their
	// time to make (µs) and CertMintCPUUS the CPU they took (µs, summed).
	CertsMinted   int64 `json:"certs_minted,omitempty"`
	CertMintCPUUS int64 `json:"cert_mint_cpu_us,omitempty"`
	CertMint      *Hist `json:"cert_mint"`
	// ReconnectLatency is the connect latency of reconnects (a reconnect storm's, or the
	// backoff's after a drop): from the TCP start of the attempt that succeeded to its CONNACK.
	ReconnectLatency *Hist `json:"reconnect_latency"`

	// ReconnectFailed counts the reconnect attempts that failed, by cause ("refused:REASON"
	// for a CONNACK's refusal): attempts of clients that had connected, apart from Refused
	// and Failed, which count clients that never did.
	ReconnectFailed map[string]int64 `json:"reconnect_failed,omitempty"`
	// RecordLayer counts the TLS connections established (TLSHandshakes) by what sealed
	// and opened their records: "loop" (the event loop's own record layer) or "tls.Conn".
	RecordLayer map[string]int64 `json:"record_layer,omitempty"`

	Subscribed      int64 `json:"subscribed"`
	SubscribeFailed int64 `json:"subscribe_failed"`
	// SubscribeRefused counts refused filters by SUBACK reason.
	SubscribeRefused map[string]int64 `json:"subscribe_refused,omitempty"`
	// Scheduled counts the messages due before the stop, reported at the end of publishing
	// (published + unsent).
	Scheduled int64 `json:"scheduled"`
	Published int64 `json:"published"` // written to the socket, not merely queued
	// PublishedQoS12 are the published messages of QoS 1 or 2: each ends acked, refused
	// (PublishRefused) or unacknowledged (Unacked).
	PublishedQoS12 int64 `json:"published_qos12,omitempty"`
	// Unacked counts the QoS 1/2 messages written whose exchange had not ended when their
	// session or the run did, by the step that did not come: UnackedNoPuback,
	// UnackedNoPubrec, UnackedNoPubcomp.
	Unacked map[string]int64 `json:"unacknowledged,omitempty"`
	// FirstPublish is when the first PUBLISH was written, CLOCK_REALTIME ns (0: none yet).
	// It is a minimum, not a count: Add keeps the earlier.
	FirstPublish int64            `json:"first_publish,omitempty"`
	Unsent       map[string]int64 `json:"unsent,omitempty"` // scheduled, never written, by cause
	Expected     int64            `json:"expected"`         // copies the broker should deliver of what was published
	Acked        int64            `json:"acked"`
	// PublishRefused are the QoS 1/2 messages the broker refused (a 5.0 PUBACK or PUBREC
	// reason code of 0x80 and up), by reason; RefusedCopies the copies the plan expected of
	// them (in Expected: the broker said it will not deliver them, so they are not lost).
	PublishRefused map[string]int64 `json:"publish_refused,omitempty"`
	RefusedCopies  int64            `json:"refused_copies,omitempty"`
	// ResponsesUnsent are the requests of the run's requesters that a responder of the run
	// did not answer (its window of responses in flight full): their expected responses
	// are in Expected, and are neither received nor lost.
	ResponsesUnsent int64 `json:"responses_unsent,omitempty"`
	// Behaviour counts what the broker did or announced that the plan did not ask for,
	// beside its refusals and DISCONNECTs, by what (BrokerBehaviour.What): publishers or
	// filters.
	Behaviour map[string]int64 `json:"behaviour,omitempty"`
	// InFlightDropped are written QoS 1/2 messages whose connection ended unacknowledged
	// and whose session did not survive, InFlightLost the copies of them that did not
	// arrive; InFlightAtEnd the copies of messages still unacknowledged on open
	// connections at the end that did not arrive (both computed after the run, when every
	// stream's received set is known).
	InFlightDropped int64 `json:"in_flight_dropped"`
	InFlightLost    int64 `json:"in_flight_lost"`
	InFlightAtEnd   int64 `json:"in_flight_at_end"`
	// OwedArrivalPerS is the rate (copies per second) at which expected copies were still
	// arriving when the drain had to end at its bound (or the run was interrupted) with
	// copies missing: over the last interval the run watched. 0 when the drain ended with
	// every copy in, or once an interval passed in which nothing arrived nor was written.
	// Above 0, the copies still missing are owed_at_end, not lost (Result.SetTotal). Set
	// once, after the run; rates of parts of a run add.
	OwedArrivalPerS int64 `json:"owed_arrival_per_s,omitempty"`
	// DeliveredOnReturn counts the received copies that arrived at a client after it
	// reconnected and were due before its reconnect (Messages.DeliveredOnReturn); in a
	// group's snapshot, by the receiving client's group.
	DeliveredOnReturn int64 `json:"delivered_on_return,omitempty"`
	// Received counts the distinct copies that arrived on expected streams; duplicates,
	// copies for no expected stream and foreign payloads are counted apart.
	Received   int64            `json:"received"`
	Unmeasured int64            `json:"unmeasured"` // received without mqblast's measurement header
	Unexpected map[string]int64 `json:"unexpected,omitempty"`
	Duplicated int64            `json:"duplicated"`
	// Redelivered counts copies that arrived again at QoS 1 with the DUP flag or after
	// their subscriber reconnected: a re-delivery QoS 1 permits (a resumed session, a
	// PUBACK the broker did not get), not in Duplicated.
	Redelivered int64 `json:"redelivered,omitempty"`
	// Retained counts copies the broker sent from its retained store because of a
	// subscription (the RETAIN flag set, without Retain As Published); RetainedAgain those
	// of them the client already had, counted nowhere else (Messages.RetainedAgain).
	Retained      int64 `json:"retained,omitempty"`
	RetainedAgain int64 `json:"retained_again,omitempty"`
	// LateSubscribed counts SUBACKs of subscriptions the broker should have answered with
	// retained messages of the run (bench.Recorder.RetainedLate).
	LateSubscribed int64 `json:"late_subscribed,omitempty"`
	OutOfOrder     int64 `json:"out_of_order"`
	// Holds: publisher holds (the broker's flow control, its not reading, no connection)
	// that ended, by kind, their total in µs, and the publishers held at least once.
	Holds          map[string]int64 `json:"holds,omitempty"`
	HeldUS         map[string]int64 `json:"held_us,omitempty"`
	HeldPublishers int64            `json:"held_publishers"`
	// The measure window's figures: messages written (published) and arrived (received)
	// inside it; latency covers the messages due inside it.
	PublishedMeasured int64 `json:"published_measured"`
	ReceivedMeasured  int64 `json:"received_measured"`
	Latency           *Hist `json:"latency"`     // receive - due (corrected)
	LatencyRaw        *Hist `json:"latency_raw"` // receive - write, for payloads of 24 bytes and more
	ScheduleLag       *Hist `json:"schedule_lag"`
	// CPUNS and RSSBytes are the client processes' CPU time over an interval and their
	// resident set at its end, summed over processes; only interval snapshots carry them.
	CPUNS    int64 `json:"cpu_ns,omitempty"`
	RSSBytes int64 `json:"rss_bytes,omitempty"`
	// Offered is what the publishers' schedule made due over an interval of a staged run
	// (published or not); only interval snapshots carry it.
	Offered int64 `json:"offered,omitempty"`
	// Delivered counts, in a group's snapshot (Groups), the copies the group's clients
	// received on expected streams; its Received counts the copies of the group's own
	// messages, wherever they arrived. The run's snapshot leaves it 0.
	Delivered int64 `json:"delivered,omitempty"`
	// Groups are the figures of each client group of a mixed run, by group (nil: the run
	// is one group). They add group by group.
	Groups []*Snapshot `json:"groups,omitempty"`
}

// The fields of a Snapshot by how they add; Add, Reset and NewSnapshot go through these
// lists, so a new figure is added to the struct and to one list (and, when the document
// shows it, paired with its field in Result.pairs). TestSnapshotFieldLists checks that
// every field is listed.

// counts are the counters that add.
func (s *Snapshot) counts() [37]*int64 {
	return [...]*int64{&s.Delivered, &s.DeliveredOnReturn, &s.Connected, &s.Reconnected, &s.Pings, &s.TLSHandshakes, &s.TLSResumed, &s.TLSCPUUS,
		&s.Subscribed, &s.SubscribeFailed, &s.Scheduled, &s.Published, &s.PublishedQoS12, &s.Expected, &s.Acked, &s.RefusedCopies, &s.ResponsesUnsent,
		&s.InFlightDropped, &s.InFlightLost, &s.InFlightAtEnd, &s.OwedArrivalPerS, &s.Received, &s.Unmeasured, &s.Duplicated, &s.Redelivered, &s.Retained, &s.RetainedAgain, &s.LateSubscribed,
		&s.OutOfOrder, &s.HeldPublishers, &s.PublishedMeasured, &s.ReceivedMeasured, &s.CPUNS, &s.RSSBytes, &s.Offered,
		&s.CertsMinted, &s.CertMintCPUUS}
}

// maps are the counts by key that add key by key.
func (s *Snapshot) maps() [13]*map[string]int64 {
	return [...]*map[string]int64{&s.Refused, &s.Failed, &s.Dropped, &s.SubscribeRefused, &s.Unsent,
		&s.Unexpected, &s.Holds, &s.HeldUS, &s.PublishRefused, &s.Behaviour, &s.Unacked, &s.ReconnectFailed, &s.RecordLayer}
}

// hists are the histograms, which merge.
func (s *Snapshot) hists() [9]**Hist {
	return [...]**Hist{&s.ConnectLatency, &s.PingRTT, &s.TLSHandshake, &s.WSUpgrade, &s.Latency,
		&s.LatencyRaw, &s.ScheduleLag, &s.ReconnectLatency, &s.CertMint}
}

// NewSnapshot returns an empty snapshot, its maps and histograms made.
func NewSnapshot() *Snapshot {
	s := &Snapshot{Examples: map[string]string{}}
	for _, m := range s.maps() {
		*m = map[string]int64{}
	}
	for _, h := range s.hists() {
		*h = NewHist()
	}
	return s
}

// NewGroupSnapshot returns an empty snapshot for a client group's figures: NewSnapshot's,
// with histograms of 2 significant digits (values within 1 %), which a worker holds once per
// group and kind beside the run's own.
func NewGroupSnapshot() *Snapshot {
	s := NewSnapshot()
	for _, h := range s.hists() {
		*h = newGroupHist()
	}
	return s
}

// Add adds o into s: counters and counts by key add, histograms merge, the first example
// of each error kind is kept, and FirstPublish is the earlier of the two.
func (s *Snapshot) Add(o *Snapshot) {
	dc, oc := s.counts(), o.counts()
	for i, p := range dc {
		*p += *oc[i]
	}
	dm, om := s.maps(), o.maps()
	for i, p := range dm {
		if *p == nil && len(*om[i]) > 0 {
			*p = map[string]int64{}
		}
		addMap(*p, *om[i])
	}
	dh, oh := s.hists(), o.hists()
	for i, p := range dh {
		if (*oh[i]).Count() == 0 {
			continue
		}
		if *p == nil {
			*p = NewHist()
		}
		(*p).Merge(*oh[i])
	}
	for k, v := range o.Examples {
		if _, ok := s.Examples[k]; !ok {
			if s.Examples == nil {
				s.Examples = map[string]string{}
			}
			s.Examples[k] = v
		}
	}
	s.FirstPublish = earliest(s.FirstPublish, o.FirstPublish)
	for i, g := range o.Groups {
		if g == nil {
			continue
		}
		for len(s.Groups) <= i {
			s.Groups = append(s.Groups, NewGroupSnapshot())
		}
		s.Groups[i].Add(g)
	}
}

// Pack keeps s's histograms, its groups' too, in their compressed form until they change
// (Hist.Pack): for a snapshot that is added to again only after a while.
func (s *Snapshot) Pack() {
	for _, h := range s.hists() {
		(*h).Pack()
	}
	for _, g := range s.Groups {
		g.Pack()
	}
}

// HeldCounts returns how many of s's histograms, its groups' too, hold a counts array (a
// run histogram's 184 KB, a group's 25 KB) rather than a compressed form or a few values.
func (s *Snapshot) HeldCounts() int {
	n := 0
	for _, h := range s.hists() {
		if *h != nil && (*h).h != nil {
			n++
		}
	}
	for _, g := range s.Groups {
		n += g.HeldCounts()
	}
	return n
}

// Reset empties s, keeping its maps and histograms for reuse (Hist.Reset).
func (s *Snapshot) Reset() {
	for _, p := range s.counts() {
		*p = 0
	}
	for _, m := range s.maps() {
		clear(*m)
	}
	for _, h := range s.hists() {
		if *h != nil {
			(*h).Reset()
		}
	}
	clear(s.Examples)
	s.FirstPublish = 0
	for _, g := range s.Groups {
		g.Reset()
	}
}

func sum(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// FailedTotal returns the clients that never connected: refused plus failed.
func (s *Snapshot) FailedTotal() int64 { return sum(s.Refused) + sum(s.Failed) }

// ReconnectFailedTotal returns the failed reconnect attempts.
func (s *Snapshot) ReconnectFailedTotal() int64 { return sum(s.ReconnectFailed) }

// UnackedTotal returns the QoS 1/2 messages written and never acknowledged.
func (s *Snapshot) UnackedTotal() int64 { return sum(s.Unacked) }

// DroppedTotal returns the established connections lost.
func (s *Snapshot) DroppedTotal() int64 { return sum(s.Dropped) }

// UnsentTotal returns the scheduled messages never written.
func (s *Snapshot) UnsentTotal() int64 { return sum(s.Unsent) }

// PublishRefusedTotal returns the messages the broker refused.
func (s *Snapshot) PublishRefusedTotal() int64 { return sum(s.PublishRefused) }

// UnexpectedTotal returns the measured copies that arrived for no expected stream.
func (s *Snapshot) UnexpectedTotal() int64 { return sum(s.Unexpected) }

// earliest returns the earlier of two CLOCK_REALTIME ns times, 0 meaning none.
func earliest(a, b int64) int64 {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}

// addMap adds src into dst key by key.
func addMap(dst, src map[string]int64) {
	for k, v := range src {
		dst[k] += v
	}
}
