package result

// Group is one client group's figures in the document of a mixed run (a scenario with
// groups): the same sections as the run's, so that what reads the run's reads a group's.
// Connections are those of the group's clients. Messages and latency are those of the
// messages the group's clients published, wherever they arrived (expected, received, lost
// and the in-flight figures of its streams): the accounting identities hold per group, and
// the groups' figures add up to the run's. Delivered counts the copies the group's own
// clients received (a backend group's intake).
type Group struct {
	Name        string      `json:"name"`
	Behaviours  []string    `json:"behaviours,omitempty"`
	Clients     int         `json:"clients"`    // in this run (or part of a run)
	Publishers  int         `json:"publishers"` // of Clients, those that publish
	Connections Connections `json:"connections"`
	Messages    Messages    `json:"messages"`
	Delivered   int64       `json:"delivered"`
	LatencyUS   Percentiles `json:"latency_us"`
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
}

// GroupInfo names a group of a run before it has figures (bench fills it from the plan).
type GroupInfo struct {
	Name       string
	Behaviours []string
	Clients    int
	Publishers int
}

// SetGroups gives r one empty group per info, in order: SetTotal then fills their
// figures from the total's per-group snapshots.
func (r *Result) SetGroups(infos []GroupInfo) {
	r.Groups = make([]Group, len(infos))
	for i, in := range infos {
		r.Groups[i] = Group{Name: in.Name, Behaviours: in.Behaviours, Clients: in.Clients, Publishers: in.Publishers}
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
		one.SetTotal(s)
		g.Connections, g.Messages, g.LatencyUS = one.Connections, one.Messages, one.LatencyUS
		g.Connections.Target = g.Clients
		g.Delivered = s.Delivered
		g.Snapshot = s
	}
}
