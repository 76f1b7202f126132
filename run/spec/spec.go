package spec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Schema is the version of the Spec's JSON form. Adding fields keeps it; renaming or
// removing one needs a new version.
const Schema = "mqblast.spec/v1"

// Spec is one run of mqblast, end to end. The zero value of every field but Scenario is
// the default: a run of the scenario against its own server (or the embedded broker), in
// as many processes as the descriptor limit needs, checked against the host first, its
// summary on stdout.
type Spec struct {
	// Schema is Schema ("" reads as it).
	Schema string `json:"schema"`
	// Scenario is what runs: a file, a built-in name, or the file's JSON itself, and the
	// changes made to it.
	Scenario Scenario `json:"scenario"`
	// Brokers replace the scenario's server: host:port or URLs (mqtts://, ws://, wss://);
	// an entry may list several, comma-separated.
	Brokers []string `json:"brokers,omitempty"`
	// Sink, if set, starts mqblast sink on loopback in a child process and runs against
	// it: a calibration run, the client host's own ceiling.
	Sink *Sink `json:"sink,omitempty"`
	// Bind are the source addresses: addresses, ranges (127.0.0.2-127.0.0.40), CIDRs or
	// interface names (their addresses of the brokers' family).
	Bind []string `json:"bind,omitempty"`
	// TLS is for brokers given as mqtts:// or wss:// URLs.
	TLS TLS `json:"tls,omitzero"`
	// PasswordFile is a file whose first line is the broker password. A Spec never holds
	// the password itself: it comes from this file, from the scenario, or from the
	// environment ($MQBLAST_PASSWORD) when the run gives a username.
	PasswordFile string `json:"password_file,omitempty"`
	// Credentials, if set, is a CSV file of each client's username and password: it
	// replaces the scenario's credentials_file (the path; the Spec never holds its
	// contents).
	Credentials string `json:"credentials,omitempty"`
	// Duration, when above 0, replaces parameters.duration_sec.
	Duration Duration `json:"duration,omitempty"`
	// Stages, when given, replaces parameters.stages: DURATION:RATE or
	// DURATION:ramp:RATE stages, comma-separated (not with Duration).
	Stages string `json:"stages,omitempty"`
	// Shard is I/N, this run's shard of the scenario's clients, or "auto": I from
	// $JOB_COMPLETION_INDEX and N from $JOB_COMPLETIONS (a Kubernetes Indexed Job).
	Shard string `json:"shard,omitempty"`
	// StartAt is when publishing starts: an RFC 3339 instant, or +DURATION from the run's
	// start.
	StartAt string `json:"start_at,omitempty"`
	// RunID is the run's identity, any printable text; shards of one run need the same
	// ("": derived from StartAt, else drawn at random).
	RunID string `json:"run_id,omitempty"`
	// Procs is the number of worker processes ("auto", 0: as many as the descriptor limit
	// needs; a limit search runs in one).
	Procs Procs `json:"procs,omitzero"`
	// Loops is the event loops per process (0: one per core).
	Loops int `json:"loops,omitempty"`
	// IDStart numbers client ids from it instead of 0.
	IDStart int `json:"id_start,omitempty"`
	// MaxPacketSize is the largest packet a client accepts from the broker (0: the
	// payload size and 64 KiB, at least 1 MiB).
	MaxPacketSize int `json:"max_packet_size,omitempty"`
	// AcceptDowngrade runs at what a broker's 5.0 CONNACK grants when it lacks what the
	// plan needs, and says so, instead of failing.
	AcceptDowngrade bool `json:"accept_downgrade,omitempty"`
	// Net, if set, puts a network profile between the client and the broker.
	Net *Net `json:"net,omitempty"`
	// Watch says what of the broker and its host is watched besides this host.
	Watch Watch `json:"watch,omitzero"`
	// Thresholds judge the run besides the scenario's own: PATH OP NUMBER over the
	// result document.
	Thresholds []string `json:"thresholds,omitempty"`
	// NoCheck skips the host checks before the run.
	NoCheck bool `json:"no_check,omitempty"`
	// Outputs are what the run writes.
	Outputs Outputs `json:"outputs,omitzero"`
	// Limit, if set, makes the run a search for the broker's limit.
	Limit *Limit `json:"limit,omitempty"`
	// Sustain, when above 0, makes the run a soak: a search holds its answer this long
	// after it; a fixed-rate run measures this long (it replaces parameters.duration_sec).
	// The hold is judged in windows of SustainWindow (0: SustainWindows' default).
	Sustain       Duration `json:"sustain,omitempty"`
	SustainWindow Duration `json:"sustain_window,omitempty"`
}

// MaxSoakWindows bounds a soak's windows: a day of one-minute windows.
const MaxSoakWindows = 1440

// SustainWindows returns the soak's window: SustainWindow when given, else a minute, or a
// tenth of the hold when that is shorter (whole seconds, at least one), or the hold over
// MaxSoakWindows when that is longer.
func (s *Spec) SustainWindows() time.Duration {
	if s.SustainWindow > 0 {
		return s.SustainWindow.D()
	}
	d := s.Sustain.D()
	w := min(time.Minute, max((d/10).Truncate(time.Second), time.Second))
	most := (d/MaxSoakWindows + time.Second - 1).Truncate(time.Second) // whole seconds, rounded up
	return max(w, most)
}

// Scenario is the scenario of a run and the changes made to it.
type Scenario struct {
	// Name is a file's path or a built-in scenario's name; with File, the name the
	// scenario's messages give it.
	Name string `json:"name,omitempty"`
	// File, if set, is the scenario file's JSON itself: a run repeated from its result
	// reads this, not the file again.
	File json.RawMessage `json:"file,omitempty"`
	// Set are PATH=VALUE changes of the scenario's fields, in order.
	Set []string `json:"set,omitempty"`
}

// Sink is the sink a calibration run starts.
type Sink struct {
	// FlushDelay is the sink's shortest time between two writes to a subscriber (0 to 1s).
	FlushDelay Duration `json:"flush_delay,omitempty"`
	// TLS makes the sink speak mqtts with a certificate made for the run, which the clients
	// trust: the run measures the client's TLS ceiling.
	TLS bool `json:"tls,omitempty"`
	// WS makes the sink speak MQTT over WebSocket (ws; with TLS, wss): the run measures the
	// client's WebSocket ceiling.
	WS bool `json:"ws,omitempty"`
}

// TLS are the TLS settings of the clients: paths, never key material.
type TLS struct {
	CAFile     string   `json:"cacert,omitempty"`      // PEM CA file (default: the system's)
	CertFile   string   `json:"cert,omitempty"`        // PEM client certificate ($clientid, $clientindex: a file per client)
	KeyFile    string   `json:"key,omitempty"`         // PEM private key of CertFile (a template like it)
	ServerName string   `json:"sni,omitempty"`         // sent as SNI and verified
	Insecure   bool     `json:"insecure,omitempty"`    // do not verify the broker
	ALPN       []string `json:"alpn,omitempty"`        // protocols to offer
	Version    string   `json:"tls_version,omitempty"` // "1.2" or "1.3" only
	// RecordLayer is what seals and opens the records of established TLS connections:
	// "loop" ("" too: the event loop's own, for TLS 1.3) or "tls.Conn" (crypto/tls's).
	RecordLayer string `json:"record_layer,omitempty"`
	// ClientCA and ClientCAKey are the PEM files of a CA that mints each client a
	// certificate of its own (the key's path, never the key), its common name
	// CertSubject, a template ("": $clientid; "none": no common name, with a SAN), its
	// subject alternative names CertSAN (templates separated by commas).
	ClientCA    string `json:"client_ca,omitempty"`
	ClientCAKey string `json:"client_ca_key,omitempty"`
	CertSubject string `json:"client_cert_subject,omitempty"`
	CertSAN     string `json:"client_cert_san,omitempty"`
}

// Given reports whether any TLS setting is given.
func (t TLS) Given() bool {
	return t.CAFile != "" || t.CertFile != "" || t.KeyFile != "" || t.ServerName != "" || t.Insecure ||
		len(t.ALPN) > 0 || t.Version != "" || t.ClientCA != "" || t.ClientCAKey != "" || t.CertSubject != "" || t.CertSAN != ""
}

// Net is a network profile between the client and the broker.
type Net struct {
	// Profile is a named profile (local, optimal, typical, worst, cloud) or custom
	// values (delay=2ms,jitter=0.4ms,loss=0.03%).
	Profile string `json:"profile"`
	// BrokerCmd is the broker started behind the packet emulator (sh -c; "": Mosquitto).
	BrokerCmd string `json:"broker_cmd,omitempty"`
}

// Watch says what of the broker is watched while the run goes on.
type Watch struct {
	BrokerPID    int    `json:"broker_pid,omitempty"`    // the broker's process (0: found when local)
	BrokerCgroup string `json:"broker_cgroup,omitempty"` // the broker's cgroup
	BrokerSys    bool   `json:"broker_sys,omitempty"`    // read the broker's $SYS topics
	// BrokerMetrics are Prometheus endpoints of the broker's host, scraped once per
	// interval; Series other series to record from them (NAME or NAME{label="value"}).
	BrokerMetrics []string `json:"broker_metrics,omitempty"`
	Series        []string `json:"broker_metric,omitempty"`
	// MetricsAuth is a file of the endpoints' credentials (default: the environment).
	MetricsAuth string `json:"broker_metrics_auth,omitempty"`
	// MetricsProcess is the process-exporter group that is the broker ("": found).
	MetricsProcess string `json:"broker_metrics_process,omitempty"`
	// MetricsTimeout bounds one scrape (0: 800ms; at most 900ms).
	MetricsTimeout Duration `json:"broker_metrics_timeout,omitempty"`
}

// Outputs are what a run writes besides its progress.
type Outputs struct {
	// Format is stdout's: "text" (the summary, also for "") or "json" (the result
	// document).
	Format string `json:"format,omitempty"`
	Out    string `json:"out,omitempty"`  // the result document's file
	HTML   string `json:"html,omitempty"` // the HTML report's file
	CSV    string `json:"csv,omitempty"`  // one row per interval
	Hlog   string `json:"hlog,omitempty"` // the intervals' histograms, HdrHistogram log
	// Metrics is an address to serve live Prometheus metrics at during the run;
	// MetricsPublic allows one that is not loopback; MetricsHold serves them this long
	// after the run.
	Metrics       string   `json:"metrics,omitempty"`
	MetricsPublic bool     `json:"metrics_public,omitempty"`
	MetricsHold   Duration `json:"metrics_hold,omitempty"`
	// RemoteWrite is a Prometheus remote-write URL to push the same series to, once per
	// interval and at the end; RemoteWriteAuth a file of its credentials (default: the
	// environment's MQBLAST_REMOTE_WRITE_*).
	RemoteWrite     string `json:"remote_write,omitempty"`
	RemoteWriteAuth string `json:"remote_write_auth,omitempty"`
	// Live is an address to serve the run's live page (its report, updated as each
	// interval closes) and its steering API at; LivePublic allows one that is not
	// loopback; LiveHold serves the final page this long after the run. The API's token is
	// no part of the Spec: it never reaches a result.
	Live       string   `json:"live,omitempty"`
	LivePublic bool     `json:"live_public,omitempty"`
	LiveHold   Duration `json:"live_hold,omitempty"`
	// LiveTokenFile is a file whose first line is the steering API's token (default:
	// $MQBLAST_LIVE_TOKEN; neither: no API).
	LiveTokenFile string `json:"live_token_file,omitempty"`
}

// Limit is a search for the highest rate the broker sustains within an SLO, in one run.
// Rates are totals: messages per second of every publisher together, or connections per
// second.
type Limit struct {
	// SLO are threshold expressions over a step's summary.
	SLO []string `json:"slo"`
	// StartRate is the first step's rate (0: the scenario's); MaxRate the highest tried
	// (0: 1000 × the start rate, at most what the publishers send).
	StartRate float64 `json:"start_rate,omitempty"`
	MaxRate   float64 `json:"max_rate,omitempty"`
	// Precision is where the bisection stops (0: 0.05); Factor the step up until a step
	// fails (0: 2).
	Precision float64 `json:"precision,omitempty"`
	Factor    float64 `json:"factor,omitempty"`
	// Step is how long each rate is held (0: 10s), Settle how much of its start is not
	// judged (0: 3s), Pause how long nothing is due after it (0: 2s), MaxDuration the
	// longest the search publishes (0: 10m).
	Step        Duration `json:"step,omitempty"`
	Settle      Duration `json:"settle,omitempty"`
	Pause       Duration `json:"pause,omitempty"`
	MaxDuration Duration `json:"max_duration,omitempty"`
	// Confirm repeats a failed step once and holds the answer once more (nil: true).
	Confirm *bool `json:"confirm,omitempty"`
	// Vary is the rate varied: VaryPublishRate ("" means it) or VaryConnectionRate.
	Vary string `json:"vary,omitempty"`
	// Find is what the search finds: FindPublishRate ("" means it, or what Vary names),
	// FindConnectRate (Vary VaryConnectionRate) or FindConnections, the number of
	// connections the broker holds.
	Find string `json:"find,omitempty"`
}

// What a limit search finds (Limit.Find; the result's limit.kind).
const (
	FindPublishRate = "publish-rate"
	FindConnectRate = "connect-rate"
	FindConnections = "connections"
)

// Kind is what the search finds: Find, or what Vary names when Find is not given.
func (l *Limit) Kind() string {
	switch {
	case l.Find != "":
		return l.Find
	case l.Vary == VaryConnectionRate:
		return FindConnectRate
	}
	return FindPublishRate
}

// The rates a limit search varies.
const (
	VaryPublishRate    = "parameters.publish_rate"
	VaryConnectionRate = "parameters.connection_rate"
)

// Confirms reports whether the search confirms its verdicts (Confirm, true when nil).
func (l *Limit) Confirms() bool { return l.Confirm == nil || *l.Confirm }

// Procs is a number of processes: 0 is "auto".
type Procs int

// MarshalJSON writes "auto" for 0, else the number.
func (p Procs) MarshalJSON() ([]byte, error) {
	if p == 0 {
		return []byte(`"auto"`), nil
	}
	return []byte(strconv.Itoa(int(p))), nil
}

// UnmarshalJSON reads "auto", a number, or a number in a string.
func (p *Procs) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) != nil {
		s = string(b)
	}
	n, err := ParseProcs(s)
	if err != nil {
		return err
	}
	*p = n
	return nil
}

// MaxProcs bounds Procs.
const MaxProcs = 256

// ParseProcs reads "auto" or a number from 1 to MaxProcs.
func ParseProcs(s string) (Procs, error) {
	if s == "auto" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > MaxProcs {
		return 0, fmt.Errorf("%q: want auto or a number from 1 to %d", s, MaxProcs)
	}
	return Procs(n), nil
}

// String is "auto" or the number.
func (p Procs) String() string {
	if p == 0 {
		return "auto"
	}
	return strconv.Itoa(int(p))
}

// Duration is a time span, written as Go writes it ("1m30s"); read from such a string or
// a number of seconds.
type Duration time.Duration

// MarshalJSON writes the span as a string ("30s").
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads "30s" or 30 (seconds).
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("%q is not a duration (want e.g. \"30s\", \"1m30s\")", s)
		}
		*d = Duration(v)
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("%s is not a duration (want e.g. \"30s\", or a number of seconds)", b)
	}
	*d = Duration(f * float64(time.Second))
	return nil
}

// D is the span as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// Read decodes a Spec from JSON: unknown fields are refused, each error names the field.
func Read(data []byte) (*Spec, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s Spec
	if err := dec.Decode(&s); err != nil {
		var ut *json.UnmarshalTypeError
		if errors.As(err, &ut) && ut.Field != "" {
			return nil, Errorf(ut.Field, "{"+ut.Field+"}: a JSON %s where %s is wanted", ut.Value, ut.Type)
		}
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value: want one spec object")
	}
	return &s, nil
}

// JSON is the Spec's JSON form, on one line (<, > and & as they are: a Spec is read by
// people, not put in HTML).
func (s *Spec) JSON() []byte {
	c := *s
	c.Schema = Schema
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&c); err != nil {
		panic("BUG: a spec does not marshal: " + err.Error())
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// Clone returns a deep copy of s.
func (s *Spec) Clone() *Spec {
	c, err := Read(s.JSON())
	if err != nil {
		panic("BUG: a spec does not read back: " + err.Error())
	}
	return c
}

// MaxRunID bounds RunID: it is recorded in every result.
const MaxRunID = 256

// Validate checks what can be checked of s without a scenario or a host: every problem,
// joined, each an *Error that names the field.
func (s *Spec) Validate() error {
	var errs []error
	add := func(field, format string, args ...any) { errs = append(errs, Errorf(field, format, args...)) }
	if s.Schema != "" && s.Schema != Schema {
		add("schema", "{schema} %q: this mqblast reads %q", s.Schema, Schema)
	}
	if s.Scenario.Name == "" && len(s.Scenario.File) == 0 {
		add("scenario.name", "{scenario.name}: give a scenario (a file or a built-in name), or its JSON as {scenario.file}")
	}
	for i, kv := range s.Scenario.Set {
		if k, _, ok := strings.Cut(kv, "="); !ok || strings.TrimSpace(k) == "" {
			add(fmt.Sprintf("scenario.set[%d]", i), "{scenario.set} %q: want path=value, e.g. parameters.connection_rate=500", RedactSet(kv))
		}
	}
	if s.Sink != nil && len(s.Brokers) > 0 {
		add("sink", "{sink} and {brokers}: pick one ({sink} starts its own server on loopback)")
	}
	if s.Duration < 0 {
		add("duration", "{duration} %v: must be more than 0 (e.g. {duration} 30s)", s.Duration.D())
	}
	if s.Duration > 0 && s.Stages != "" {
		add("duration", "{duration} and {stages}: the stages' total is the duration; give one of them")
	}
	if s.Shard != "" && s.Shard != "auto" {
		if _, _, err := ParseShard(s.Shard); err != nil {
			add("shard", "{shard} %q: want I/N with 0 <= I < N, e.g. 0/4", s.Shard)
		}
	}
	if id := strings.TrimSpace(s.RunID); len(id) > MaxRunID || strings.IndexFunc(id, unicode.IsControl) >= 0 {
		add("run_id", "{run_id} %.40q: want printable text of at most %d bytes "+
			"(e.g. a Kubernetes Job's uid, or a date and a name: 2026-01-02-fanout)", id, MaxRunID)
	}
	if s.Procs < 0 || s.Procs > MaxProcs {
		add("procs", "{procs} %q: want auto or a number from 1 to %d", strconv.Itoa(int(s.Procs)), MaxProcs)
	}
	if s.Loops < 0 {
		add("loops", "{loops} %d: must be 0 (one event loop per core) or more", s.Loops)
	}
	if s.IDStart < 0 {
		add("id_start", "{id_start} %d: must be 0 or more", s.IDStart)
	}
	if s.Watch.BrokerPID < 0 {
		add("watch.broker_pid", "{watch.broker_pid} %d: want a process id", s.Watch.BrokerPID)
	}
	if len(s.Watch.Series) > 0 && len(s.Watch.BrokerMetrics) == 0 {
		add("watch.broker_metric", "{watch.broker_metric} needs {watch.broker_metrics} URL: the endpoint that publishes the series")
	}
	if t := s.Watch.MetricsTimeout.D(); t < 0 || t > MaxScrapeTimeout {
		add("watch.broker_metrics_timeout", "{watch.broker_metrics_timeout} %v: want at most %v, so that a scrape ends within its one-second interval", t, MaxScrapeTimeout)
	}
	if s.Watch.BrokerSys && s.Sink != nil {
		add("watch.broker_sys", "{watch.broker_sys} with {sink}: the sink is no broker and publishes no $SYS topics; leave out one of them")
	}
	o := &s.Outputs
	if o.Format != "" && o.Format != "text" && o.Format != "json" {
		add("outputs.format", "{outputs.format} %q: must be text or json", o.Format)
	}
	if o.MetricsHold < 0 {
		add("outputs.metrics_hold", "{outputs.metrics_hold} %v: must be 0 or more", o.MetricsHold.D())
	}
	if o.Metrics == "" && (o.MetricsPublic || o.MetricsHold > 0) {
		add("outputs.metrics", "{outputs.metrics_public} and {outputs.metrics_hold} need {outputs.metrics} ADDR")
	}
	if o.RemoteWrite == "" && o.RemoteWriteAuth != "" {
		add("outputs.remote_write_auth", "{outputs.remote_write_auth} needs {outputs.remote_write} URL")
	}
	if o.LiveHold < 0 {
		add("outputs.live_hold", "{outputs.live_hold} %v: must be 0 or more", o.LiveHold.D())
	}
	if o.Live == "" && (o.LivePublic || o.LiveHold > 0 || o.LiveTokenFile != "") {
		add("outputs.live", "{outputs.live_public}, {outputs.live_hold} and {outputs.live_token_file} need {outputs.live} ADDR")
	}
	if n := s.Net; n != nil && n.Profile == "" {
		add("net.profile", "{net.profile}: give a network profile (local, optimal, typical, worst, cloud, or delay=2ms,jitter=0.4ms,loss=0.03%%)")
	}
	if s.Limit != nil {
		errs = append(errs, s.validateLimit()...)
	}
	errs = append(errs, s.validateSustain()...)
	return errors.Join(errs...)
}

// MaxScrapeTimeout is the longest scrape of a broker host's endpoint that an interval of
// a second leaves room for.
const MaxScrapeTimeout = 900 * time.Millisecond

// validateLimit checks a search's settings and what does not go with a search.
func (s *Spec) validateLimit() []error {
	l := s.Limit
	var errs []error
	add := func(field, format string, args ...any) { errs = append(errs, Errorf(field, format, args...)) }
	switch {
	case s.Stages != "":
		add("stages", "{stages}: limit sets the rate itself, step by step")
	case s.Duration != 0:
		add("duration", "{duration}: limit runs until its answer; bound it with {limit.max_duration}")
	case s.Shard != "" || s.StartAt != "":
		add("shard", "{shard} and {start_at}: limit runs in one process on one host")
	case s.Net != nil:
		add("net", "{net}: not with limit yet; run the search on a host whose network is the one to measure")
	case s.Procs > 1:
		add("procs", "{procs} %d: limit runs in one process (it changes the rate of one engine); "+
			"give {procs} 1, or fewer clients than one process holds", s.Procs)
	}
	step, settle, pause, most := l.Durations()
	switch {
	case l.Vary != "" && l.Vary != VaryPublishRate && l.Vary != VaryConnectionRate:
		add("limit.vary", "{limit.vary} %s: want %s (a scenario with publishers) or %s (a Connections scenario)",
			l.Vary, VaryPublishRate, VaryConnectionRate)
	case l.Find != "" && l.Find != FindPublishRate && l.Find != FindConnectRate && l.Find != FindConnections:
		add("limit.find", "{limit.find} %s: want %s, %s or %s", l.Find, FindPublishRate, FindConnectRate, FindConnections)
	case l.Find != "" && l.Vary != "" && l.Kind() != map[string]string{VaryPublishRate: FindPublishRate, VaryConnectionRate: FindConnectRate}[l.Vary]:
		add("limit.find", "{limit.find} %s and {limit.vary} %s say different things: give {limit.find} alone", l.Find, l.Vary)
	case len(l.SLO) == 0:
		add("limit.slo", "limit needs at least one {limit.slo}, e.g. {limit.slo} 'latency_us.p99<50000' {limit.slo} 'messages.lost==0'")
	case l.Factor != 0 && l.Factor <= 1:
		add("limit.factor", "{limit.factor} %s: want more than 1 (the step up from one rate to the next)", plain(l.Factor))
	case l.Precision != 0 && (l.Precision >= 1 || l.Precision < 0.001):
		add("limit.precision", "{limit.precision} %s: want from 0.001 to 0.99 (0.05: within 5 %%)", plain(l.Precision))
	case step%time.Second != 0 || pause%time.Second != 0:
		add("limit.step", "{limit.step} %v and {limit.pause} %v: want whole seconds (the intervals' length)", step, pause)
	case settle >= step:
		add("limit.settle", "{limit.settle} %v is not shorter than {limit.step} %v: nothing of a step would be judged", settle, step)
	case most < step+pause:
		add("limit.max_duration", "{limit.max_duration} %v is shorter than one step and its pause (%v)", most, step+pause)
	case l.StartRate < 0:
		add("limit.start_rate", "{limit.start_rate} %s: want a rate above 0", plain(l.StartRate))
	case l.MaxRate < 0:
		add("limit.max_rate", "{limit.max_rate} %s: want a rate above 0", plain(l.MaxRate))
	}
	return errs
}

// validateSustain checks a soak's hold and windows, and what does not go with a soak.
func (s *Spec) validateSustain() []error {
	if s.Sustain == 0 && s.SustainWindow == 0 {
		return nil
	}
	var errs []error
	add := func(field, format string, args ...any) { errs = append(errs, Errorf(field, format, args...)) }
	d, w := s.Sustain.D(), s.SustainWindows()
	switch {
	case s.Sustain == 0:
		add("sustain_window", "{sustain_window} needs {sustain} DURATION: the hold it cuts into windows")
	case d < 0 || w <= 0:
		add("sustain", "{sustain} %v and {sustain_window} %v: must be more than 0", d, w)
	case d < 2*time.Second:
		add("sustain", "{sustain} %v is shorter than two intervals (2s): a drift needs two windows to compare", d)
	case w%time.Second != 0:
		add("sustain_window", "{sustain_window} %v: want whole seconds (the intervals' length)", w)
	case d < 2*w:
		add("sustain", "{sustain} %v is shorter than two windows ({sustain_window} %v): a drift needs two windows to compare", d, w)
	case d/w > MaxSoakWindows:
		add("sustain_window", "{sustain} %v in {sustain_window} %v is %d windows, more than %d: give a longer {sustain_window}", d, w, d/w, MaxSoakWindows)
	case s.Limit == nil && s.Duration != 0:
		add("duration", "{duration} and {sustain}: a soak measures for its {sustain}; give one of them")
	case s.Limit == nil && s.Stages != "":
		add("stages", "{stages} and {sustain}: a soak holds one rate; give one of them")
	case s.Shard != "":
		add("sustain", "{sustain} with {shard}: a soak is judged on one run's intervals, not a shard's")
	case s.Limit != nil && s.Limit.Kind() == FindConnectRate:
		add("sustain", "{sustain} with {limit.find} %s: holding a connect rate would dial rate × sustain new clients; "+
			"soak the publish rate instead", FindConnectRate)
	case s.Limit != nil && s.Limit.Kind() == FindConnections:
		add("sustain", "{sustain} with {limit.find} %s: a held population's soak is a Connections run's "+
			"(mqblast run SCENARIO --sustain D with the count found as its clients)", FindConnections)
	}
	return errs
}

// plain is a number as it was given, in plain digits (never e-notation).
func plain(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// Durations returns the search's step, settle, pause and longest duration, their defaults
// filled in.
func (l *Limit) Durations() (step, settle, pause, most time.Duration) {
	or := func(d Duration, def time.Duration) time.Duration {
		if d > 0 {
			return d.D()
		}
		return def
	}
	return or(l.Step, 10*time.Second), or(l.Settle, 3*time.Second), or(l.Pause, 2*time.Second), or(l.MaxDuration, 10*time.Minute)
}

// ParseShard reads I/N: 0 <= I < N, digits alone.
func ParseShard(s string) (index, count int, err error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || !isDigits(a) || !isDigits(b) || err1 != nil || err2 != nil || n < 1 || i >= n {
		return 0, 0, fmt.Errorf("%q: want I/N with 0 <= I < N, e.g. 0/4", s)
	}
	return i, n, nil
}

func isDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// RedactSet returns a PATH=VALUE change fit for a message: the value of a password is
// hidden.
func RedactSet(kv string) string {
	if strings.Contains(strings.ToLower(kv), "password") {
		k, _, _ := strings.Cut(kv, "=")
		if k == kv {
			k, _, _ = strings.Cut(kv, ":")
		}
		return k + "=(hidden)"
	}
	return kv
}

// With returns s with the fields at paths (JSON paths: "outputs.out", "limit.step") taken
// from o: a field o leaves out is left out. A command line runs a written Spec with the
// flags given beside it this way.
func (s *Spec) With(o *Spec, paths []string) (*Spec, error) {
	var to, from map[string]any
	if err := json.Unmarshal(s.JSON(), &to); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(o.JSON(), &from); err != nil {
		return nil, err
	}
	for _, p := range paths {
		setPath(to, from, p)
	}
	b, err := json.Marshal(to)
	if err != nil {
		return nil, err
	}
	return Read(b)
}

// setPath copies the value at the dotted path of from into to, making the objects on the
// way; a value from lacks is removed from to.
func setPath(to, from map[string]any, path string) {
	head, rest, more := strings.Cut(path, ".")
	if !more {
		if v, ok := from[head]; ok {
			to[head] = v
		} else {
			delete(to, head)
		}
		return
	}
	sub, _ := to[head].(map[string]any)
	if sub == nil {
		sub = map[string]any{}
		to[head] = sub
	}
	fsub, _ := from[head].(map[string]any)
	setPath(sub, fsub, rest)
}
