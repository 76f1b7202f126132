package result

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// The checks of a document read back (CheckDocument), over its JSON as decoded: a field
// the document lacks is skipped, so that a document of an earlier writer, or one without
// a field a later writer adds, is judged by what it shows. Paths name JSON fields:
// "a.b", "a.*" for every key of object a, "a[].b" for field b of every element of array a.
// To check a new field, add its path to a table.

// docCounts are the fields that count something: never negative.
var docCounts = []string{
	"connections.target", "connections.established", "connections.failed", "connections.refused.*",
	"connections.failed_by_cause.*", "connections.dropped", "connections.reconnected", "connections.dropped_by_cause.*",
	"connections.connect_rate_per_s", "connections.connect_phase_s", "connections.pings", "connections.tls_handshakes",
	"connections.tls_resumed", "connections.tls_handshake_cpu_us", "connections.certs_minted", "connections.cert_mint_cpu_us",
	"connections.reconnect_failed", "connections.reconnect_failed_by_cause.*", "messages.unacknowledged_by_step.*",
	"transport.record_layer.*",
	"messages.*", "messages.silent_publishers.*", "messages.silent_publishers.examples[].copies", "messages.unsent.*", "messages.unexpected.*", "messages.subscribe_refused.*", "messages.refused.*",
	"broker_behaviour[].count",
	"throughput.*",
	"client.cpu_s", "client.cpu_per_connect_us", "client.max_rss_bytes", "client.rss_per_connection_bytes",
	"client.cpu_measure_s", "client.run_delay_s",
	"broker_stalled.publishers", "broker_stalled.holds.*", "broker_stalled.held_s.*",
	"start.late_ms", "errors[].count",
	"intervals[].t_s", "intervals[].established", "intervals[].connected", "intervals[].failed", "intervals[].dropped",
	"intervals[].connect_per_s", "intervals[].published", "intervals[].unsent", "intervals[].expected",
	"intervals[].received", "intervals[].duplicated", "intervals[].unexpected", "intervals[].unmeasured",
	"intervals[].broker_cpu_percent", "intervals[].broker_rss_bytes", "intervals[].publish_per_s",
	"intervals[].receive_per_s", "intervals[].client_cpu_percent", "intervals[].client_rss_bytes",
	"broker_process.cpu_s", "broker_process.cpu_percent_avg", "broker_process.cpu_percent_peak", "broker_process.rss_bytes",
	"broker_process.rss_peak_bytes", "broker_process.fds", "broker_process.cpu_per_message_us",
	"broker_host.gaps", "broker_host.cpus", "broker_host.cpu_percent_avg", "broker_host.cpu_percent_peak",
	"broker_host.mem_used_avg_bytes", "broker_host.mem_used_peak_bytes", "broker_host.rx_bytes_per_s_avg",
	"broker_host.tx_bytes_per_s_avg", "broker_host.sources[].scrapes_ok", "broker_host.sources[].scrapes_failed",
	"intervals[].broker_host.cpu_percent", "intervals[].broker_host.mem_used_bytes",
	"intervals[].broker_host.rx_bytes_per_s", "intervals[].broker_host.tx_bytes_per_s",
	"broker_sys.read", "broker_sys.read_counted", "broker_sys.totals.*", "broker_sys.clients_connected_max",
	"broker_sys.refresh_s", "broker_sys.gaps", "intervals[].broker_sys.per_s.*", "intervals[].broker_sys.clients_connected",
	"intervals[].broker_sys.age_s", "intervals[].offered", "intervals[].offered_per_s", "intervals[].held_us",
	"intervals[].stage", "stages[].start_s", "stages[].duration_s", "stages[].publish_rate", "stages[].intervals",
	"stages[].span_s", "stages[].offered_per_s", "stages[].throughput.*", "stages[].messages.*",
	"stages[].broker_stalled.held_s", "stages[].broker_stalled.dropped",
	"groups[].clients", "groups[].publishers", "groups[].delivered", "groups[].delivered_on_return",
	"groups[].connections.target", "groups[].connections.established", "groups[].connections.failed",
	"groups[].connections.dropped", "groups[].connections.reconnected", "groups[].messages.*",
	"groups[].messages.unsent.*", "groups[].churn.clients", "groups[].churn.ended",
	"groups[].connections.reconnect_failed", "groups[].messages.unacknowledged_by_step.*",
	"soak.window_s", "soak.degraded_after_s", "soak.windows[].expected", "soak.windows[].received", "soak.windows[].lost",
	"soak.windows[].unsent", "soak.windows[].refused_copies", "soak.windows[].connect_failed", "soak.windows[].dropped",
	"soak.windows[].broker_rss_bytes", "soak.windows[].broker_cpu_percent",
}

// docPercentiles are the Percentiles objects: their fields never negative, and
// p50 <= p90 <= p99 <= p999 <= max.
var docPercentiles = []string{
	"latency_us", "latency_raw_us", "connections.connect_latency_us", "connections.ping_rtt_us",
	"connections.tls_handshake_us", "connections.ws_upgrade_us", "connections.cert_mint_us", "client.schedule_lag_us",
	"intervals[].latency_us", "intervals[].latency_raw_us", "intervals[].connect_latency_us", "intervals[].schedule_lag_us",
	"stages[].latency_us", "stages[].latency_raw_us", "stages[].schedule_lag_us",
	"groups[].latency_us", "groups[].connections.connect_latency_us", "groups[].connections.reconnect_latency_us",
	"soak.windows[].latency_us",
}

// docGroupSums are the figures whose groups' values add up to the run's (a mixed run's
// groups[]).
var docGroupSums = []string{"connections.established", "connections.reconnected", "messages.scheduled",
	"messages.published", "messages.expected", "messages.received", "latency_us.count"}

// percentileOrder are the fields of Percentiles that never decrease, in order.
var percentileOrder = []string{"p50", "p90", "p99", "p999", "max"}

// docIdentity is an accounting identity of the document: the field at Total is the sum of
// the fields at Parts ("x.*": every value of object x; "x?": 0 when absent, a field later
// writers added). It is checked when every field is present and a number, and When (if
// set) says it holds for the document.
type docIdentity struct {
	Total string
	Parts []string
	When  func(doc map[string]any) bool
}

// docIdentities are the identities the README states, and the totals of the counts by cause.
var docIdentities = []docIdentity{
	{Total: "messages.scheduled", Parts: []string{"messages.published", "messages.unsent_total"}},
	{Total: "messages.unsent_total", Parts: []string{"messages.unsent.*"}},
	{Total: "messages.unexpected_total", Parts: []string{"messages.unexpected.*"}},
	{Total: "messages.refused_total", Parts: []string{"messages.refused.*?"}},
	{Total: "connections.failed", Parts: []string{"connections.refused.*", "connections.failed_by_cause.*"}},
	{Total: "connections.dropped", Parts: []string{"connections.dropped_by_cause.*"}},
	{Total: "remote_write.pushes", Parts: []string{"remote_write.sent", "remote_write.failed", "remote_write.dropped"}},
	{Total: "connections.reconnect_failed", Parts: []string{"connections.reconnect_failed_by_cause.*?"}},
	// Every TLS connection established took one record layer.
	{Total: "connections.tls_handshakes", Parts: []string{"transport.record_layer.*"}},
	// Every QoS 1/2 message written was acknowledged, refused, or never acknowledged.
	{Total: "messages.unacknowledged", Parts: []string{"messages.unacknowledged_by_step.*?"}},
	{Total: "messages.published_qos12", Parts: []string{"messages.acked", "messages.refused_total?", "messages.unacknowledged?"}},
	// A shard's publishers expect copies that its subscribers do not receive (they are on
	// other shards), and a Subscribe run's publishers are outside the plan: the identity
	// holds for a whole run whose scenario knows its publishers.
	{Total: "messages.expected", Parts: []string{"messages.received", "messages.lost", "messages.owed_at_end?", "messages.in_flight_at_end", "messages.in_flight_lost",
		"messages.refused_copies?", "messages.responses_unsent?", "messages.not_shared_copies?"},
		When: func(doc map[string]any) bool {
			typ, _ := leafAt(doc, "scenario.type").(string)
			return leafAt(doc, "shard") == nil && typ != "" && typ != "Subscribe"
		}},
}

// CheckDocument checks the JSON of a result document: counts and percentiles not negative,
// percentiles in order, and the accounting identities. It returns every problem, one line
// each, as "PATH: what is wrong", or nil.
func CheckDocument(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return err
	}
	var probs []string
	for _, p := range docCounts {
		for _, l := range expand(doc, p) {
			if v, ok := l.v.(json.Number); ok && strings.HasPrefix(v.String(), "-") {
				probs = append(probs, fmt.Sprintf("%s: %s is negative: it counts something", l.path, v))
			}
		}
	}
	for _, p := range docPercentiles {
		for _, l := range expand(doc, p) {
			probs = append(probs, checkPercentiles(l.path, l.v)...)
		}
	}
	if len(probs) == 0 { // an identity of negative counts would only repeat them
		for _, id := range docIdentities {
			probs = append(probs, id.check(doc)...)
		}
		probs = append(probs, checkGroups(doc)...)
	}
	if len(probs) == 0 {
		return nil
	}
	return fmt.Errorf("%s", strings.Join(probs, "\n"))
}

// checkPercentiles checks a Percentiles object at path.
func checkPercentiles(path string, v any) []string {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	var probs []string
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		if n, ok := obj[k].(json.Number); ok && strings.HasPrefix(n.String(), "-") {
			probs = append(probs, fmt.Sprintf("%s.%s: %s is negative: latencies and counts are not", path, k, n))
		}
	}
	if len(probs) > 0 {
		return probs
	}
	prev, prevK := 0.0, ""
	for _, k := range percentileOrder {
		n, ok := obj[k].(json.Number)
		if !ok {
			continue
		}
		f, err := n.Float64()
		if err != nil {
			continue
		}
		if prevK != "" && f < prev {
			probs = append(probs, fmt.Sprintf("%s.%s: %s is below %s %v: percentiles never decrease", path, k, n, prevK, prev))
		}
		prev, prevK = f, k
	}
	return probs
}

// checkGroups checks a mixed run's groups: each group's identities (as the run's, a
// group's messages being those its clients published), and the groups adding up to the
// run's figures.
func checkGroups(doc map[string]any) []string {
	groups, _ := doc["groups"].([]any)
	if len(groups) == 0 {
		return nil
	}
	var probs []string
	sums := make([]int64, len(docGroupSums))
	known := make([]bool, len(docGroupSums))
	for i := range known {
		known[i] = true
	}
	for i, g := range groups {
		gd, ok := g.(map[string]any)
		if !ok {
			continue
		}
		for _, id := range docIdentities {
			for _, p := range id.checkOn(doc, gd) {
				probs = append(probs, fmt.Sprintf("groups[%d].%s", i, p))
			}
		}
		for k, path := range docGroupSums {
			n, ok := intAt(gd, path)
			sums[k] += n
			known[k] = known[k] && ok
		}
	}
	for k, path := range docGroupSums {
		run, ok := intAt(doc, path)
		if ok && known[k] && run != sums[k] {
			probs = append(probs, fmt.Sprintf("%s: %d is not the sum of the groups' (%d): the groups do not add up to the run", path, run, sums[k]))
		}
	}
	return probs
}

// check checks the identity on doc.
func (id docIdentity) check(doc map[string]any) []string { return id.checkOn(doc, doc) }

// checkOn checks the identity on doc, a part of the document root (a group), When
// judging root.
func (id docIdentity) checkOn(root, doc map[string]any) []string {
	if id.When != nil && !id.When(root) {
		return nil
	}
	total, ok := intAt(doc, id.Total)
	if !ok {
		return nil
	}
	var sum int64
	var terms []string
	for _, p := range id.Parts {
		p, optional := strings.CutSuffix(p, "?")
		if optional && leafAt(doc, strings.TrimSuffix(p, ".*")) == nil {
			continue
		}
		if name, ok := strings.CutSuffix(p, ".*"); ok {
			obj, isObj := leafAt(doc, name).(map[string]any)
			if !isObj {
				return nil // absent or null: an earlier writer's document
			}
			var part int64
			for _, v := range obj {
				n, ok := intOf(v)
				if !ok {
					return nil
				}
				part += n
			}
			sum += part
			terms = append(terms, fmt.Sprintf("the sum of %s %d", lastName(name), part))
			continue
		}
		n, ok := intAt(doc, p)
		if !ok {
			return nil
		}
		sum += n
		terms = append(terms, fmt.Sprintf("%s %d", lastName(p), n))
	}
	if sum == total {
		return nil
	}
	return []string{fmt.Sprintf("%s: %d is not %s (%d): the document does not add up", id.Total, total, strings.Join(terms, " + "), sum)}
}

// lastName is the last field name of a path.
func lastName(path string) string { return path[strings.LastIndexByte(path, '.')+1:] }

// leaf is a field found at a path.
type leaf struct {
	path string
	v    any
}

// expand returns the fields of doc at pattern, in order ("*" every key, "[]" every
// element); fields that are absent give none.
func expand(doc map[string]any, pattern string) []leaf {
	var out []leaf
	var walk func(v any, segs []string, path string)
	walk = func(v any, segs []string, path string) {
		if len(segs) == 0 {
			out = append(out, leaf{path, v})
			return
		}
		obj, ok := v.(map[string]any)
		if !ok {
			return
		}
		name, each := strings.CutSuffix(segs[0], "[]")
		if name == "*" {
			for _, k := range slices.Sorted(maps.Keys(obj)) {
				walk(obj[k], segs[1:], joinPath(path, k))
			}
			return
		}
		x, ok := obj[name]
		if !ok {
			return
		}
		if !each {
			walk(x, segs[1:], joinPath(path, name))
			return
		}
		arr, _ := x.([]any)
		for i, e := range arr {
			walk(e, segs[1:], fmt.Sprintf("%s[%d]", joinPath(path, name), i))
		}
	}
	walk(doc, strings.Split(pattern, "."), "")
	return out
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// leafAt is the field of doc at path (no "*" or "[]"), nil when absent.
func leafAt(doc map[string]any, path string) any {
	if ls := expand(doc, path); len(ls) == 1 {
		return ls[0].v
	}
	return nil
}

// intAt is the integer at path, false when absent or not an integer.
func intAt(doc map[string]any, path string) (int64, bool) { return intOf(leafAt(doc, path)) }

func intOf(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	i, err := n.Int64()
	return i, err == nil
}
