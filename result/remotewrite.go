package result

// RemoteWrite is what the run's pushes to a Prometheus remote-write receiver
// (--remote-write) came to: one push per interval and one at the end, each sent, failed
// (its tries spent, or refused) or dropped (never tried: the queue was full or the run's end
// came first), so Pushes = Sent + Failed + Dropped. A push carries the counters' totals,
// so a dropped or failed one leaves a gap in the receiver's series, not a wrong count.
type RemoteWrite struct {
	Pushes  int64 `json:"pushes"`
	Sent    int64 `json:"sent"`
	Failed  int64 `json:"failed"`
	Dropped int64 `json:"dropped"`
	// Retries are the attempts past each push's first; SamplesSent the samples in the
	// pushes the receiver accepted.
	Retries     int64 `json:"retries"`
	SamplesSent int64 `json:"samples_sent"`
	// LastError is the latest failure's cause (a status or a network error; never a
	// credential).
	LastError string `json:"last_error,omitempty"`
}
