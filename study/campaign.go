package study

import (
	"encoding/json"
	"net"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mqblast/mqblast/internal/brokers"
	"github.com/mqblast/mqblast/internal/secret"
	"github.com/mqblast/mqblast/internal/strictjson"
	"github.com/mqblast/mqblast/scenario"
)

// Campaign is a study's plan: brokers × scenarios (with their sweeps) × network profiles ×
// repetitions. Load or Parse it; both validate every field and every cell's scenario.
type Campaign struct {
	Name        string         `json:"name"`
	Comments    []string       `json:"comments,omitempty"`
	Brokers     []Broker       `json:"brokers"`
	Scenarios   []ScenarioSpec `json:"scenarios"`
	Profiles    []string       `json:"profiles"`
	Repetitions int            `json:"repetitions"`
	// Duration and Warmup override every scenario's duration_sec and warmup_sec when set.
	Duration time.Duration `json:"-"`
	Warmup   time.Duration `json:"-"`
	Pause    time.Duration `json:"-"` // between two cells
	// Order is "interleaved" (repetition 1 of every cell, then repetition 2, ...) or
	// "shuffled" (the same, each round in a random order drawn from Seed).
	Order string `json:"order"`
	Seed  int64  `json:"seed,omitempty"`
	// Restart is "each-cell" (a fresh broker for every cell, when the study can restart
	// it) or "never".
	Restart string `json:"restart"`

	file string // the file name, for errors and relative scenario paths
	dir  string // the directory scenario paths are relative to
}

// Broker is one broker of a campaign and how the study drives it.
type Broker struct {
	Name string `json:"name"`
	// Type is external (a running broker at Address), command (Start starts it),
	// embedded (mqblast broker), mosquitto (started with a config the study writes),
	// rabbitmq, aedes or gmqtt (the same, internal/brokers' configurations) or sink
	// (mqblast sink).
	Type    string `json:"type"`
	Address string `json:"address"` // host:port; {port} is a free port the study picks
	Start   string `json:"start,omitempty"`
	Stop    string `json:"stop,omitempty"`
	Restart string `json:"restart,omitempty"`
	PID     int    `json:"pid,omitempty"`    // the process to sample (default: the listener, when local)
	Cgroup  string `json:"cgroup,omitempty"` // the cgroup to sample
	// Metrics are the broker host's Prometheus endpoints (--broker-metrics of each cell),
	// Metric the other series to record from them (--broker-metric).
	Metrics []string `json:"metrics,omitempty"`
	Metric  []string `json:"metric,omitempty"`
	// StartTimeout bounds the wait for a started broker to accept connections.
	StartTimeout time.Duration `json:"-"`
}

// ScenarioSpec is one scenario of a campaign with the overrides of its cells.
type ScenarioSpec struct {
	Scenario string  `json:"scenario"` // a built-in name or a file (relative to the campaign's)
	Label    string  `json:"label"`
	Set      []KV    `json:"set,omitempty"`
	Sweep    []Sweep `json:"sweep,omitempty"`

	path string // the file as opened, or "" for a built-in
	base *scenario.Scenario
	bad  bool // its own fields had errors (reported): its cells are not checked
}

// KV is one --set override.
type KV struct {
	Path  string `json:"path"`
	Value string `json:"value"`
}

// Sweep is one swept field: every value gives its own cells.
type Sweep struct {
	Path   string   `json:"path"`
	Values []string `json:"values"`

	bad map[int]bool // values that are not strings, numbers or booleans (reported)
}

// Broker types.
const (
	TypeExternal  = "external"
	TypeCommand   = "command"
	TypeEmbedded  = "embedded"
	TypeMosquitto = "mosquitto"
	TypeSink      = "sink"
	TypeRabbitMQ  = brokers.RabbitMQ
	TypeAedes     = brokers.Aedes
	TypeGMQTT     = brokers.GMQTT
)

var brokerTypes = []string{TypeExternal, TypeCommand, TypeEmbedded, TypeMosquitto, TypeRabbitMQ, TypeAedes, TypeGMQTT, TypeSink}

// foreign reports whether a broker type is one of internal/brokers' kinds.
func foreign(typ string) bool { return slices.Contains(brokers.Kinds, typ) }

// Load reads and validates the campaign file at path.
func Load(path string) (*Campaign, error) {
	data, err := strictjson.ReadFile(path, "campaign")
	if err != nil {
		return nil, err
	}
	return Parse(path, filepath.Dir(path), data)
}

// Parse decodes and validates a campaign; name prefixes every error and dir is where
// scenario files are looked up. It reports every problem, each with its JSON path:
// syntax, unknown fields (with a suggestion), wrong types and values, and every cell's
// scenario as the cell would run it (its sets and sweep values applied and validated).
func Parse(name, dir string, data []byte) (*Campaign, error) {
	l := &errList{File: name}
	obj := strictjson.ParseObject(data, "a campaign", l)
	if obj == nil {
		return nil, l.Err()
	}
	c := &Campaign{Name: strings.TrimSuffix(filepath.Base(name), ".json"), Profiles: []string{"local"},
		Repetitions: 3, Order: "interleaved", Restart: "each-cell", file: name, dir: dir}
	c.decode(obj, l)
	c.checkCells(l)
	if len(l.Errs) > 0 {
		return nil, l.Err()
	}
	return c, nil
}

var campaignFields = []string{"name", "comments", "brokers", "scenarios", "profiles", "repetitions",
	"duration_sec", "warmup_sec", "pause_sec", "order", "seed", "restart"}

func (c *Campaign) decode(obj *object, l *errList) {
	unknown(obj, "", campaignFields, l)
	if v, ok := obj.Get("name"); ok {
		c.Name = str(v, "name", l)
	}
	if v, ok := obj.Get("comments"); ok {
		c.Comments = strs(v, "comments", l)
	}
	v, ok := obj.Get("brokers")
	arr, isArr := v.([]any)
	switch {
	case !ok:
		l.Add("brokers", "missing: list the brokers to study, e.g. [{\"name\": \"mosquitto\", \"type\": \"mosquitto\"}]")
	case !isArr || len(arr) == 0:
		l.Add("brokers", "%s: want a non-empty array of brokers", show(v))
	default:
		seen := map[string]bool{}
		for i, b := range arr {
			p := index("brokers", i)
			br := decodeBroker(b, p, l)
			if br.Name != "" && seen[br.Name] {
				l.Add(join(p, "name"), "%q: another broker has this name", br.Name)
			}
			seen[br.Name] = true
			c.Brokers = append(c.Brokers, br)
		}
	}
	v, ok = obj.Get("scenarios")
	arr, isArr = v.([]any)
	switch {
	case !ok:
		l.Add("scenarios", "missing: list the scenarios, e.g. [{\"scenario\": \"quick-p2p-100\"}]")
	case !isArr || len(arr) == 0:
		l.Add("scenarios", "%s: want a non-empty array of scenarios", show(v))
	default:
		seen := map[string]bool{}
		for i, s := range arr {
			p := index("scenarios", i)
			sp := c.decodeScenario(s, p, l)
			if sp.Label != "" && seen[sp.Label] {
				l.Add(join(p, "label"), "%q: another scenario has this label (give each a label of its own)", sp.Label)
			}
			seen[sp.Label] = true
			c.Scenarios = append(c.Scenarios, sp)
		}
	}
	if v, ok := obj.Get("profiles"); ok {
		c.Profiles = strs(v, "profiles", l)
		if len(c.Profiles) == 0 {
			l.Add("profiles", "empty: want at least one network profile, e.g. [\"local\"]")
		}
		seen := map[string]bool{}
		for i, p := range c.Profiles {
			if err := CheckProfile(p); err != nil {
				l.Add(index("profiles", i), "%q: %v", p, err)
			}
			if seen[p] {
				l.Add(index("profiles", i), "%q is listed twice", p)
			}
			seen[p] = true
		}
	}
	if v, ok := obj.Get("repetitions"); ok {
		n, ok := integer(v)
		if !ok || n < 1 || n > 1000 {
			l.Add("repetitions", "%s: want a whole number from 1 to 1000", show(v))
		}
		c.Repetitions = n
	}
	c.Duration = secs(obj, "duration_sec", false, l)
	c.Warmup = secs(obj, "warmup_sec", true, l)
	c.Pause = secs(obj, "pause_sec", true, l)
	if v, ok := obj.Get("order"); ok {
		c.Order = oneOf(v, "order", []string{"interleaved", "shuffled"}, l)
	}
	if v, ok := obj.Get("seed"); ok {
		n, ok := v.(json.Number)
		s, err := strconv.ParseInt(string(n), 10, 64)
		if !ok || err != nil {
			l.Add("seed", "%s: want a whole number (the shuffle's seed)", show(v))
		}
		c.Seed = s
	}
	if v, ok := obj.Get("restart"); ok {
		c.Restart = oneOf(v, "restart", []string{"each-cell", "never"}, l)
	}
	if c.Duration > 0 && c.Warmup >= c.Duration {
		l.Add("warmup_sec", "%v is not shorter than duration_sec %v: nothing would be measured", c.Warmup.Seconds(), c.Duration.Seconds())
	}
}

var brokerFields = []string{"name", "type", "address", "start", "stop", "restart", "pid", "cgroup", "metrics", "metric", "start_timeout_sec"}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

func decodeBroker(v any, path string, l *errList) Broker {
	var b Broker
	obj, ok := v.(*object)
	if !ok {
		l.Add(path, "%s: want a broker object with a name", show(v))
		return b
	}
	unknown(obj, path, brokerFields, l)
	get := func(k string) string {
		if v, ok := obj.Get(k); ok {
			return str(v, join(path, k), l)
		}
		return ""
	}
	b.Name, b.Type, b.Address = get("name"), get("type"), get("address")
	b.Start, b.Stop, b.Restart, b.Cgroup = get("start"), get("stop"), get("restart"), get("cgroup")
	if _, ok := obj.Get("name"); !ok {
		l.Add(join(path, "name"), "missing: every broker needs a name (it labels the report)")
	} else if !nameRE.MatchString(b.Name) {
		l.Add(join(path, "name"), "%q: want letters, digits, '.', '_' or '-' (it names files)", b.Name)
	}
	if v, ok := obj.Get("metrics"); ok {
		b.Metrics = strs(v, join(path, "metrics"), l)
	}
	if v, ok := obj.Get("metric"); ok {
		b.Metric = strs(v, join(path, "metric"), l)
		if len(b.Metrics) == 0 {
			l.Add(join(path, "metric"), "needs \"metrics\": the endpoints that publish these series")
		}
	}
	if v, ok := obj.Get("pid"); ok {
		n, ok := integer(v)
		if !ok || n < 0 {
			l.Add(join(path, "pid"), "%s: want a process id", show(v))
		}
		b.PID = n
	}
	b.StartTimeout = secs(obj, join(path, "start_timeout_sec"), false, l)
	if b.Type == "" {
		switch {
		case b.Start != "":
			b.Type = TypeCommand
		case b.Address != "":
			b.Type = TypeExternal
		default:
			l.Add(join(path, "type"), "missing: give a type (%s), or an address, or a start command", strings.Join(brokerTypes, ", "))
			return b
		}
	}
	switch b.Type {
	case TypeExternal:
		if b.Address == "" {
			l.Add(join(path, "address"), "missing: an external broker needs its host:port")
		}
		if b.Start != "" {
			l.Add(join(path, "start"), "an external broker is not started by the study (use type command)")
		}
	case TypeCommand:
		if b.Start == "" {
			l.Add(join(path, "start"), "missing: a command broker needs the command that starts it, e.g. \"mosquitto -c my.conf\"")
		}
	case TypeEmbedded, TypeMosquitto, TypeSink, TypeRabbitMQ, TypeAedes, TypeGMQTT:
		if b.Start != "" {
			l.Add(join(path, "start"), "type %s is started by the study; for a command of your own use type command", b.Type)
		}
	default:
		l.Add(join(path, "type"), "%q is not a broker type (want %s)%s", b.Type, strings.Join(brokerTypes, ", "), suggest(b.Type, brokerTypes))
		return b
	}
	if b.StartTimeout == 0 {
		b.StartTimeout = brokers.StartTimeout(b.Type) // 15 s but for the slow starters (RabbitMQ: 90 s)
	}
	if b.Type == TypeExternal && b.Stop != "" {
		l.Add(join(path, "stop"), "an external broker is not stopped by the study; for one it starts and stops, give start (type command)")
	}
	if b.Type != TypeExternal && b.Restart != "" {
		l.Add(join(path, "restart"), "the study starts this broker afresh for every cell (stop, then start); restart is for an external broker")
	}
	if b.Address == "" {
		b.Address = "127.0.0.1:{port}"
	}
	if host, port, err := net.SplitHostPort(b.Address); err != nil || host == "" || port == "" {
		l.Add(join(path, "address"), "%q is not host:port (e.g. 127.0.0.1:1883, or 127.0.0.1:{port} for a free port)", b.Address)
	} else if port == "{port}" && b.Type == TypeExternal {
		l.Add(join(path, "address"), "%q: {port} is for brokers the study starts; give the external broker's port", b.Address)
	} else if n, err := strconv.Atoi(port); port != "{port}" && (err != nil || n < 1 || n > 65535) {
		l.Add(join(path, "address"), "%q: the port must be 1-65535 or {port}", b.Address)
	}
	if strings.Contains(b.Address, "{port}") && b.Type == TypeCommand && !strings.Contains(b.Start, "{port}") && !strings.Contains(b.Start, "{addr}") {
		l.Add(join(path, "start"), "%q does not use {port} or {addr}: the broker would not listen on the port the study picks", b.Start)
	}
	return b
}

var scenarioSpecFields = []string{"scenario", "label", "set", "sweep"}

func (c *Campaign) decodeScenario(v any, path string, l *errList) (sp ScenarioSpec) {
	obj, ok := v.(*object)
	if !ok {
		l.Add(path, "%s: want an object such as {\"scenario\": \"quick-p2p-100\"}", show(v))
		return sp
	}
	before := len(l.Errs)
	defer func() { sp.bad = len(l.Errs) > before }()
	unknown(obj, path, scenarioSpecFields, l)
	if v, ok := obj.Get("scenario"); ok {
		sp.Scenario = str(v, join(path, "scenario"), l)
	} else {
		l.Add(join(path, "scenario"), "missing: a built-in scenario name (mqblast scenarios) or a file")
	}
	if sp.Scenario != "" {
		if s, ok := scenario.Builtin(sp.Scenario); ok {
			sp.base = s
		} else {
			p := sp.Scenario
			if !filepath.IsAbs(p) {
				p = filepath.Join(c.dir, p)
			}
			s, err := scenario.Load(p)
			if err != nil {
				l.Add(join(path, "scenario"), "%q is neither a built-in scenario (mqblast scenarios) nor a valid file: %v", sp.Scenario, err)
			} else {
				abs, _ := filepath.Abs(p)
				sp.base, sp.path = s, abs
			}
		}
	}
	sp.Label = sp.Scenario
	if sp.base != nil {
		sp.Label = sp.base.Name
		if sp.path == "" {
			sp.Label = sp.Scenario
		}
	}
	if v, ok := obj.Get("label"); ok {
		sp.Label = str(v, join(path, "label"), l)
	}
	if v, ok := obj.Get("set"); ok {
		o, ok := v.(*object)
		if !ok {
			l.Add(join(path, "set"), "%s: want an object of field paths and values, e.g. {\"parameters.publish_rate\": 4}", show(v))
		} else {
			for i, k := range o.Keys {
				t, ok := setText(o.Vals[i])
				switch {
				case !ok && scenario.SecretPath(k):
					l.Add(join(join(path, "set"), k), "want a string (the value is not shown: it is a secret)")
				case !ok:
					l.Add(join(join(path, "set"), k), "%s: want a string, number or boolean", show(o.Vals[i]))
				}
				sp.Set = append(sp.Set, KV{Path: k, Value: t})
			}
		}
	}
	if v, ok := obj.Get("sweep"); ok {
		o, ok := v.(*object)
		if !ok {
			l.Add(join(path, "sweep"), "%s: want an object of field paths and value lists, e.g. {\"parameters.payload_size\": [\"1KB\", \"10KB\"]}", show(v))
		} else {
			for i, k := range o.Keys {
				sw := Sweep{Path: k}
				kp := join(join(path, "sweep"), k)
				if scenario.SecretPath(k) {
					l.Add(kp, "a secret is not swept (its values would name the cells in study.json and the report): "+
						"give the password in \"set\" or $%s", secret.PasswordEnv)
					continue
				}
				switch vv := o.Vals[i].(type) {
				case []any:
					for j, x := range vv {
						t, ok := setText(x)
						if !ok {
							l.Add(index(kp, j), "%s: want a string, number or boolean", show(x))
							if sw.bad == nil {
								sw.bad = map[int]bool{}
							}
							sw.bad[j] = true
						}
						sw.Values = append(sw.Values, t)
					}
				case string: // "1KB,10KB,1MB", as --set lists them
					for _, x := range strings.Split(vv, ",") {
						sw.Values = append(sw.Values, strings.TrimSpace(x))
					}
				default:
					l.Add(kp, "%s: want a list of values, e.g. [\"1KB\", \"10KB\"] or \"1KB,10KB\"", show(vv))
				}
				if len(sw.Values) == 0 {
					l.Add(kp, "empty: a sweep needs at least one value")
				}
				sp.Sweep = append(sp.Sweep, sw)
			}
		}
	}
	return sp
}

// checkCells builds every distinct cell's scenario (broker and repetition aside) and
// validates it, so that a bad sweep value is found before the first cell runs.
func (c *Campaign) checkCells(l *errList) {
	for i := range c.Scenarios {
		sp := &c.Scenarios[i]
		path := index("scenarios", i)
		if sp.base == nil {
			continue
		}
		before := len(l.Errs)
		for _, kv := range sp.Set {
			s := sp.base.Clone()
			if err := s.Set(kv.Path, kv.Value); err != nil {
				l.Add(join(join(path, "set"), kv.Path), "%s", oneLine(err))
			}
		}
		for _, sw := range sp.Sweep {
			for j, v := range sw.Values {
				if sw.bad[j] {
					continue
				}
				s := sp.base.Clone()
				if err := s.Set(sw.Path, v); err != nil {
					l.Add(index(join(join(path, "sweep"), sw.Path), j), "%s", oneLine(err))
				}
			}
		}
		if len(l.Errs) > before || sp.bad {
			continue
		}
		for _, combo := range sp.combos() {
			s, err := c.cellScenario(sp, combo, "127.0.0.1:1883")
			if err == nil {
				_, err = scenario.NewPlan(s)
			}
			if err != nil {
				l.Add(path, "the cell %s is not a valid scenario: %s", comboName(combo), oneLine(err))
			}
		}
	}
}

// combos returns the cartesian product of the sweeps, the last sweep varying fastest.
func (sp *ScenarioSpec) combos() [][]KV {
	out := [][]KV{nil}
	for _, sw := range sp.Sweep {
		var next [][]KV
		for _, prev := range out {
			for _, v := range sw.Values {
				next = append(next, append(append([]KV(nil), prev...), KV{Path: sw.Path, Value: v}))
			}
		}
		out = next
	}
	return out
}

// cellScenario is the scenario of one cell: the base, its sets, the sweep values, the
// campaign's duration and warm-up, and the broker.
func (c *Campaign) cellScenario(sp *ScenarioSpec, combo []KV, broker string) (*scenario.Scenario, error) {
	s := sp.base.Clone()
	for _, kv := range c.cellSets(sp, combo) {
		if err := s.Set(kv.Path, kv.Value); err != nil {
			return nil, err
		}
	}
	if err := s.SetBrokers([]string{broker}); err != nil {
		return nil, err
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return s, nil
}

// cellPassword is the password a cell's sets give (server.password), or "" for none or the
// marker (the cell then takes $MQBLAST_PASSWORD from the study's environment); groups are
// the groups' own passwords they give (groups.NAME.server.password), by group name (a
// marker leaves the group's to $MQBLAST_GROUP_PASSWORDS).
func (c *Campaign) cellPassword(sp *ScenarioSpec, combo []KV) (pw string, groups map[string]string) {
	for _, kv := range c.cellSets(sp, combo) {
		switch g, ok := scenario.PasswordPath(kv.Path); {
		case !ok:
		case g == "":
			pw = kv.Value
		case kv.Value == scenario.RedactedPassword:
			delete(groups, g)
		default:
			if groups == nil {
				groups = map[string]string{}
			}
			groups[g] = kv.Value
		}
	}
	if pw == scenario.RedactedPassword {
		pw = ""
	}
	return pw, groups
}

// redacted is the campaign as study.json records it: the value of a secret set replaced
// by the marker.
func (c *Campaign) redacted() *Campaign {
	r := *c
	r.Scenarios = append([]ScenarioSpec(nil), c.Scenarios...)
	for i := range r.Scenarios {
		sets := append([]KV(nil), r.Scenarios[i].Set...)
		for j := range sets {
			if scenario.SecretPath(sets[j].Path) {
				sets[j].Value = scenario.RedactedPassword
			}
		}
		r.Scenarios[i].Set = sets
	}
	return &r
}

// cellSets are the --set overrides of a cell, in the order they apply.
func (c *Campaign) cellSets(sp *ScenarioSpec, combo []KV) []KV {
	out := append([]KV(nil), sp.Set...)
	out = append(out, combo...)
	if c.Duration > 0 {
		out = append(out, KV{Path: "parameters.duration_sec", Value: strconv.FormatFloat(c.Duration.Seconds(), 'f', -1, 64)})
	}
	if c.Warmup > 0 {
		out = append(out, KV{Path: "parameters.warmup_sec", Value: strconv.FormatFloat(c.Warmup.Seconds(), 'f', -1, 64)})
	}
	return out
}

func comboName(combo []KV) string {
	if len(combo) == 0 {
		return "(no sweep)"
	}
	parts := make([]string, len(combo))
	for i, kv := range combo {
		parts[i] = kv.Path + "=" + kv.Value
	}
	return strings.Join(parts, " ")
}

// oneLine joins a multi-line error into one line.
func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", "; ") }

// unknown reports the keys of obj that are not known fields.
func unknown(obj *object, path string, known []string, l *errList) {
	strictjson.Fields(obj, path, known, l, nil)
}

func str(v any, path string, l *errList) string {
	s, ok := v.(string)
	if !ok {
		l.Add(path, "%s: want a string", show(v))
	}
	return s
}

func strs(v any, path string, l *errList) []string {
	arr, ok := v.([]any)
	if !ok {
		l.Add(path, "%s: want an array of strings", show(v))
		return nil
	}
	out := make([]string, 0, len(arr))
	for i, x := range arr {
		out = append(out, str(x, index(path, i), l))
	}
	return out
}

// integer reads a whole number, as scenario files do.
var integer = strictjson.Integer

// secs reads the time span at key of obj (a dotted path whose last part is the key): 0
// when it is absent; it must be above 0 (at or above with zeroOK) and at most a day.
func secs(obj *object, key string, zeroOK bool, l *errList) time.Duration {
	name := key[strings.LastIndexByte(key, '.')+1:]
	v, ok := obj.Get(name)
	if !ok {
		return 0
	}
	d, ok := strictjson.Seconds(v, 24*time.Hour)
	if !ok || d < 0 || (d == 0 && !zeroOK) {
		want := "> 0"
		if zeroOK {
			want = ">= 0"
		}
		l.Add(key, "%s: want seconds %s (a number, or a Go duration such as \"1.5s\"), at most a day", show(v), want)
		return 0
	}
	return d
}

func oneOf(v any, path string, allowed []string, l *errList) string {
	s, ok := v.(string)
	for _, a := range allowed {
		if ok && s == a {
			return s
		}
	}
	l.Add(path, "%s: want one of %s%s", show(v), strings.Join(allowed, ", "), suggest(s, allowed))
	return allowed[0]
}
