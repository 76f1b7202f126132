package bench

// Clock is the kernel's estimate of its wall clock's error, as adjtimex(2) reports it: what
// separates the start instants of shards on different hosts (--start-at).
type Clock struct {
	// MaxErrorUS is the kernel's bound on the clock's error, in microseconds; EstErrorUS
	// its estimate. NTP (chrony, ntpd, systemd-timesyncd) sets both.
	MaxErrorUS int64 `json:"max_error_us"`
	EstErrorUS int64 `json:"est_error_us"`
	// Synchronized is false when the kernel marks the clock unsynchronised (STA_UNSYNC,
	// or adjtimex returns TIME_ERROR): no time daemon disciplines it.
	Synchronized bool `json:"synchronized"`
}

// HostClock returns this host's clock error estimate; nil when the kernel does not say.
func HostClock() *Clock { return hostClock() }
