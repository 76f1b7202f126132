package result

// Keys of BrokerSys.Totals and IntervalBrokerSys.PerS: the broker's own counters, as it
// publishes them on $SYS (Mosquitto's names; a broker without one leaves the key out).
const (
	// SysPublishReceived and SysPublishSent are PUBLISH messages received from clients
	// and sent to them ($SYS/broker/publish/messages/{received,sent}).
	SysPublishReceived = "publish_received"
	SysPublishSent     = "publish_sent"
	// SysPublishDropped are PUBLISH messages the broker dropped by its own policy
	// ($SYS/broker/publish/messages/dropped: a subscriber's queue full, max_queued_messages).
	SysPublishDropped = "publish_dropped"
	// SysMessagesReceived and SysMessagesSent are MQTT messages as the broker counts them
	// ($SYS/broker/messages/{received,sent}: every packet for Mosquitto, PUBLISH for
	// mochi-mqtt).
	SysMessagesReceived = "messages_received"
	SysMessagesSent     = "messages_sent"
	// SysBytesReceived and SysBytesSent are bytes ($SYS/broker/bytes/{received,sent}).
	SysBytesReceived = "bytes_received"
	SysBytesSent     = "bytes_sent"
)

// Notes of BrokerSys.
const (
	// SysNoteNone: the broker published nothing on $SYS while the run went on.
	SysNoteNone = "the broker published no $SYS topics"
	// SysNoteQoS2: Mosquitto 2.0 leaves the QoS 2 PUBLISH it receives out of its counter.
	SysNoteQoS2 = "the broker's publish totals exclude QoS 2: Mosquitto leaves the QoS 2 PUBLISH it receives out of publish/messages/received, so they are not compared with mqblast's"
	// SysNoteNoBaseline: no refresh of $SYS arrived before the run within the wait, so the
	// counters before it are the retained values the broker computed at its last refresh,
	// which may miss an earlier run's last messages.
	SysNoteNoBaseline = "no $SYS refresh arrived before the run: the broker's counters before it are its retained values, which may be older than its counts, so its totals may hold earlier traffic and are not compared"
	// SysNoteStale: no refresh of $SYS arrived after the run's end within the wait.
	SysNoteStale = "no $SYS refresh arrived after the run's end: the broker's totals may miss the last messages"
)

// BrokerSys is what the broker said about itself on $SYS during the run (--broker-sys),
// read on a connection of its own that is not counted in the run's figures. Its figures
// are as fresh as the broker refreshes $SYS (Mosquitto's sys_interval, 10 s by default).
type BrokerSys struct {
	// Source is the broker address read; Version its $SYS/broker/version.
	Source  string `json:"source"`
	Version string `json:"version,omitempty"`
	// Topics are the $SYS topics seen, sorted.
	Topics []string `json:"topics,omitempty"`
	// Read counts the $SYS messages the reader got. ReadCounted are those among them
	// that fell between the broker's first and last publish_sent values: a broker that
	// counts its $SYS messages as sent (Mosquitto) counts these too, so
	// Totals[SysPublishSent] minus ReadCounted is what it sent to everyone else: the run's
	// clients, and any other client of the broker, other $SYS readers included.
	Read        int64 `json:"read"`
	ReadCounted int64 `json:"read_counted,omitempty"`
	// Totals are the broker's counters over the run (keys Sys*): the last reading after
	// the run ended minus the first before it started (the broker's first refresh after
	// the reader subscribed); a counter the broker had not published before the run is
	// left out.
	Totals map[string]int64 `json:"totals,omitempty"`
	// ClientsConnectedMax is the most clients the broker said were connected, this
	// reader included.
	ClientsConnectedMax int64 `json:"clients_connected_max,omitempty"`
	// Load is the latest value of every $SYS/broker/load/ topic, by the rest of its name
	// (Mosquitto's moving averages of a count per minute: "messages/received/1min" …).
	Load map[string]float64 `json:"load,omitempty"`
	// RefreshS is how often the broker refreshed $SYS, as seen (0: not known).
	RefreshS float64 `json:"refresh_s,omitempty"`
	// Fresh says a refresh arrived after the run's end: the totals include its last
	// messages.
	Fresh bool `json:"fresh"`
	// Comparable says the broker's publish totals are meant to equal the run's published
	// and received: the broker counts every QoS the run used, the reader had no gap, a
	// refresh before the run gave the first reading, the last reading is fresh.
	Comparable bool `json:"comparable"`
	// Gaps counts the times the reader's connection dropped; Error is its latest error.
	Gaps  int    `json:"gaps,omitempty"`
	Error string `json:"error,omitempty"`
	// Notes say what the broker does not publish or count (Sys* notes).
	Notes []string `json:"notes,omitempty"`
}

// Total returns the broker's total for key (Sys*), if it published that counter.
func (b *BrokerSys) Total(key string) (int64, bool) {
	v, ok := b.Totals[key]
	return v, ok
}

// IntervalBrokerSys is an interval's reading of the broker's $SYS.
type IntervalBrokerSys struct {
	// PerS are the broker's counters per second (keys Sys*), over its latest refresh.
	PerS map[string]float64 `json:"per_s,omitempty"`
	// ClientsConnected is the broker's count of connected clients, this reader included.
	ClientsConnected int64 `json:"clients_connected,omitempty"`
	// AgeS is how old the latest $SYS message was at the interval's end, in seconds.
	AgeS float64 `json:"age_s"`
}
