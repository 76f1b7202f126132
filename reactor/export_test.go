package reactor

// SetStopGap makes StopPublishing call f where its thread may be taken off its CPU (a
// loaded host): tests only. It returns the function that restores the default.
func SetStopGap(f func()) (restore func()) {
	stopGap = f
	return func() { stopGap = nil }
}
