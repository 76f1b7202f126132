package tuning

// Per-connection budgets used by [ForConnections] when no plan estimate is at hand. They are
// deliberately round: a plan's own estimate replaces them.
const (
	// FDHeadroom is the number of file descriptors a process needs besides its sockets
	// (epoll, eventfds, stdio, result files, listeners).
	FDHeadroom = 64
	// SocketBytesPerConn is the kernel socket buffer memory (counted by net.ipv4.tcp_mem)
	// budgeted per connection: about one page in flight.
	SocketBytesPerConn = 4 << 10
	// HeapBytesPerConn is the memory budgeted per connection for mqblast itself and the
	// kernel's per-socket structures (socket, file, epoll item).
	HeapBytesPerConn = 12 << 10
	// DefaultBrokerPort is the MQTT port assumed when Needs.BrokerPort is zero.
	DefaultBrokerPort = 1883
	// MaxPortsPerAddr is the most ephemeral ports one source address can offer (1024-65535).
	MaxPortsPerAddr = 65535 - 1024 + 1
)

// Needs describes what a run will ask of this host. Zero fields take the defaults their
// comments state; [ForConnections] fills a Needs from a connection count alone.
type Needs struct {
	// Connections is the number of client connections mqblast opens from this host.
	Connections int `json:"connections"`
	// PerDestination is the number of connections to the busiest destination (address and
	// port); 0 means Connections spread evenly over Destinations.
	PerDestination int `json:"per_destination"`
	// Destinations is the number of distinct broker addresses; 0 means 1.
	Destinations int `json:"destinations"`
	// SourceAddrs is the number of local source addresses connections are spread over
	// (--bind); 0 means 1.
	SourceAddrs int `json:"source_addrs"`
	// Procs is the number of mqblast processes sharing the connections, each with its own
	// RLIMIT_NOFILE; 0 means 1.
	Procs int `json:"procs"`
	// FDsPerProc is the number of file descriptors each process needs; 0 means
	// Connections/Procs (rounded up) plus FDHeadroom.
	FDsPerProc int `json:"fds_per_proc"`
	// LocalBroker says a broker runs on this host: it holds the other end of every connection
	// (descriptors, conntrack is shared, socket memory doubles) and its listen backlog matters.
	LocalBroker bool `json:"local_broker"`
	// BrokerPort is the broker's TCP port, used in the conntrack bypass rule; 0 means 1883.
	BrokerPort int `json:"broker_port"`
	// ConnectRate is the planned connection rate in connections per second; 0 means unknown.
	ConnectRate int `json:"connect_rate_per_s"`
	// SocketMemBytes is the kernel socket buffer memory the run is expected to hold, in bytes
	// (this host's side, the broker's too when LocalBroker).
	SocketMemBytes int64 `json:"socket_mem_bytes"`
	// HeapBytes is the memory mqblast's processes are expected to hold, in bytes.
	HeapBytes int64 `json:"heap_bytes"`
}

// ForConnections returns the Needs of a run of n connections to one destination from addrs
// source addresses in procs processes, budgeting memory with SocketBytesPerConn and
// HeapBytesPerConn. addrs and procs below 1 mean 1.
func ForConnections(n, addrs, procs int) Needs {
	return Needs{
		Connections:    n,
		SourceAddrs:    max(addrs, 1),
		Procs:          max(procs, 1),
		SocketMemBytes: int64(n) * SocketBytesPerConn,
		HeapBytes:      int64(n) * HeapBytesPerConn,
	}
}

func (n Needs) procs() int        { return max(n.Procs, 1) }
func (n Needs) sourceAddrs() int  { return max(n.SourceAddrs, 1) }
func (n Needs) destinations() int { return max(n.Destinations, 1) }

func (n Needs) brokerPort() int {
	if n.BrokerPort > 0 {
		return n.BrokerPort
	}
	return DefaultBrokerPort
}

func (n Needs) perDestination() int {
	if n.PerDestination > 0 {
		return n.PerDestination
	}
	return ceilDiv(n.Connections, n.destinations())
}

// fdsPerProc is the descriptors one mqblast process needs.
func (n Needs) fdsPerProc() int {
	if n.FDsPerProc > 0 {
		return n.FDsPerProc
	}
	return ceilDiv(n.Connections, n.procs()) + FDHeadroom
}

// hostSockets is the number of sockets the run holds on this host: one per connection, two
// when the broker holds the other end here.
func (n Needs) hostSockets() int {
	if n.LocalBroker {
		return 2 * n.Connections
	}
	return n.Connections
}

func ceilDiv(a, b int) int {
	if b <= 0 {
		return a
	}
	return (a + b - 1) / b
}
