package tuning

import "time"

// ListenerSearchLimit is the longest FindListeners searches.
const ListenerSearchLimit = 2 * time.Second

// Listeners is what FindListeners found, and how far it searched.
type Listeners struct {
	// PIDs are the processes holding a listening socket of the port, lowest first.
	PIDs []int
	// Sockets is the number of sockets listening on the port (several with SO_REUSEPORT,
	// or for IPv4 and IPv6).
	Sockets int
	// Searched is the number of processes whose descriptors were read, FDs the number of
	// descriptors read, Skipped the processes left unread.
	Searched, FDs, Skipped int
}
