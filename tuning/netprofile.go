package tuning

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Path is the impairment of one direction of the path to the broker.
type Path struct {
	// Delay is added to every packet.
	Delay time.Duration `json:"delay_ns"`
	// Jitter is the half-width of a uniform spread around Delay (netem's default
	// distribution): each packet waits Delay ± Jitter. Jitter never exceeds Delay.
	Jitter time.Duration `json:"jitter_ns"`
	// Loss is the probability, 0 to 1, that a packet is dropped.
	Loss float64 `json:"loss"`
}

// IsZero reports whether p changes nothing.
func (p Path) IsZero() bool { return p.Delay == 0 && p.Jitter == 0 && p.Loss == 0 }

// String is p as the items ParseProfile reads ("delay=1.25ms,jitter=250us,loss=0.02%"),
// "none" for the zero Path.
func (p Path) String() string {
	if p.IsZero() {
		return "none"
	}
	var out []string
	for _, f := range pathFields {
		if v := f.get(p); v != "" {
			out = append(out, f.key+"="+v)
		}
	}
	return strings.Join(out, ",")
}

// pathFields are a Path's items in their canonical order, each as its value's text ("" for 0).
var pathFields = []struct {
	key string
	get func(Path) string
}{
	{"delay", func(p Path) string { return formatDuration(p.Delay) }},
	{"jitter", func(p Path) string { return formatDuration(p.Jitter) }},
	{"loss", func(p Path) string {
		if p.Loss == 0 {
			return ""
		}
		return formatPercent(p.Loss)
	}},
}

// formatDuration is d as ParseDuration reads it, in ASCII (us, not µs), "" for 0.
func formatDuration(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return strings.Replace(d.String(), "µs", "us", 1)
}

// Profile is a network profile: what happens to packets on the way to the broker (Up, client
// to broker) and back (Down, broker to client).
type Profile struct {
	// Name is the named profile this one is, or was derived from; "" for custom values.
	Name string `json:"name,omitempty"`
	// Up is the client-to-broker direction.
	Up Path `json:"up"`
	// Down is the broker-to-client direction.
	Down Path `json:"down"`
}

// IsLocal reports whether p changes nothing in either direction.
func (p Profile) IsLocal() bool { return p.Up.IsZero() && p.Down.IsZero() }

// String is the canonical spelling of p, which ParseProfile reads back: the name of a named
// profile left unchanged, else its items ("delay=2ms,jitter=400µs,loss=0.03%", with "up:"
// and "down:" on the items that differ between directions).
func (p Profile) String() string {
	if p.Name != "" {
		if np, ok := namedProfile(p.Name); ok && np == p {
			return p.Name
		}
	}
	if p.IsLocal() {
		return "local"
	}
	// Items equal both ways without a prefix, then those that differ with up: and down:.
	var items, differ []string
	for _, f := range pathFields {
		up, down := f.get(p.Up), f.get(p.Down)
		switch {
		case up == down && up != "":
			items = append(items, f.key+"="+up)
		case up != down:
			if up != "" { // an item left out is 0
				differ = append(differ, "up:"+f.key+"="+up)
			}
			if down != "" {
				differ = append(differ, "down:"+f.key+"="+down)
			}
		}
	}
	items = append(items, differ...)
	return strings.Join(items, ",")
}

// sym is the same Path in both directions.
func sym(delay, jitter time.Duration, loss float64) Profile {
	p := Path{Delay: delay, Jitter: jitter, Loss: loss}
	return Profile{Up: p, Down: p}
}

// namedProfiles are the named network profiles, from the edge-broker benchmark testbed
// (github.com/michalke-it/benchmarking_os_mqtt_brokers_2023, config.yml `qos:`): the delay,
// jitter and loss of each direction.
var namedProfiles = []struct {
	name, about string
	p           Profile
}{
	{"local", "no impairment", Profile{}},
	{"optimal", "1.25 ms ± 0.25 ms, 0.02 % loss each way", sym(1250*time.Microsecond, 250*time.Microsecond, 0.0002)},
	{"typical", "2.08 ms ± 0.42 ms, 0.03 % loss each way", sym(2080*time.Microsecond, 420*time.Microsecond, 0.0003)},
	{"worst", "3.125 ms ± 0.625 ms, 0.05 % loss each way", sym(3125*time.Microsecond, 625*time.Microsecond, 0.0005)},
	{"cloud", "12.5 ms each way", sym(12500*time.Microsecond, 0, 0)},
}

func namedProfile(name string) (Profile, bool) {
	for _, np := range namedProfiles {
		if np.name == name {
			p := np.p
			p.Name = name
			return p, true
		}
	}
	return Profile{}, false
}

// NamedProfile is one of the named profiles, with a line saying what it is.
type NamedProfile struct {
	Profile Profile
	About   string
}

// NamedProfiles returns the named profiles (local, optimal, typical, worst, cloud).
func NamedProfiles() []NamedProfile {
	out := make([]NamedProfile, 0, len(namedProfiles))
	for _, np := range namedProfiles {
		p, _ := namedProfile(np.name)
		out = append(out, NamedProfile{Profile: p, About: np.about})
	}
	return out
}

func profileNames() string {
	names := make([]string, 0, len(namedProfiles))
	for _, np := range namedProfiles {
		names = append(names, np.name)
	}
	return strings.Join(names, ", ")
}

// Limits of what ParseProfile accepts.
const (
	// MaxDelay is the largest delay or jitter of a profile.
	MaxDelay = 10 * time.Second
)

// ProfileSyntax describes what ParseProfile reads, for help texts.
const ProfileSyntax = `PROFILE is a named profile (local, optimal, typical, worst, cloud) or comma-separated
items delay=DURATION, jitter=DURATION, loss=PERCENT%, each for both directions, or for one
with up: (client to broker) or down: (broker to client) in front; a named profile may come
first and the items change it: "worst,up:loss=1%", "delay=2ms,jitter=0.4ms,loss=0.03%",
"up:delay=5ms,down:delay=1ms". Jitter is uniform within ±jitter and never reorders packets.`

// ParseProfile reads a profile: a name (local, optimal, typical, worst, cloud) or items
// (see ProfileSyntax), and validates it. Errors name the item and how to fix it.
func ParseProfile(s string) (Profile, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Profile{}, fmt.Errorf("network profile is empty: give a name (%s) or items such as delay=2ms,jitter=0.4ms,loss=0.03%%", profileNames())
	}
	var p Profile
	items := strings.Split(s, ",")
	for i, item := range items {
		item = strings.TrimSpace(item)
		if i == 0 && !strings.Contains(item, "=") {
			np, ok := namedProfile(item)
			if !ok {
				return Profile{}, fmt.Errorf("network profile %q: unknown profile %q: want one of %s, or items such as delay=2ms,jitter=0.4ms,loss=0.03%%", s, item, profileNames())
			}
			p = np
			continue
		}
		if err := p.set(item); err != nil {
			return Profile{}, fmt.Errorf("network profile %q: %w", s, err)
		}
	}
	if err := p.Validate(); err != nil {
		return Profile{}, fmt.Errorf("network profile %q: %w", s, err)
	}
	if p.Name != "" {
		if np, _ := namedProfile(p.Name); np != p {
			p.Name = "" // changed: custom values, which String spells out
		}
	}
	return p, nil
}

func (p *Profile) set(item string) error {
	dirs := []*Path{&p.Up, &p.Down}
	kv := item
	switch {
	case strings.HasPrefix(item, "up:"):
		dirs, kv = []*Path{&p.Up}, item[len("up:"):]
	case strings.HasPrefix(item, "down:"):
		dirs, kv = []*Path{&p.Down}, item[len("down:"):]
	}
	key, val, ok := strings.Cut(kv, "=")
	if !ok || val == "" {
		if _, named := namedProfile(item); named {
			return fmt.Errorf("item %q: a named profile can only come first", item)
		}
		return fmt.Errorf("item %q: want KEY=VALUE with KEY delay, jitter or loss (and up: or down: in front for one direction)", item)
	}
	switch strings.TrimSpace(key) {
	case "delay", "jitter":
		d, err := time.ParseDuration(strings.TrimSpace(val))
		if err != nil {
			return fmt.Errorf("item %q: %q is not a duration: write it like 2ms or 400us", item, val)
		}
		if d < 0 || d > MaxDelay {
			return fmt.Errorf("item %q: %s is outside 0 to %s", item, d, MaxDelay)
		}
		for _, dir := range dirs {
			if key == "delay" {
				dir.Delay = d
			} else {
				dir.Jitter = d
			}
		}
	case "loss":
		f, err := parsePercent(strings.TrimSpace(val))
		if err != nil {
			return fmt.Errorf("item %q: %w", item, err)
		}
		for _, dir := range dirs {
			dir.Loss = f
		}
	default:
		return fmt.Errorf("item %q: unknown key %q: want delay, jitter or loss", item, key)
	}
	return nil
}

// Validate checks p's values: durations within 0 to MaxDelay, jitter not above the delay
// (a packet cannot leave before it came), loss from 0 to 100 %.
func (p Profile) Validate() error {
	for _, d := range []struct {
		name string
		p    Path
	}{{"up", p.Up}, {"down", p.Down}} {
		switch {
		case d.p.Delay < 0 || d.p.Delay > MaxDelay:
			return fmt.Errorf("%s delay %s is outside 0 to %s", d.name, d.p.Delay, MaxDelay)
		case d.p.Jitter < 0 || d.p.Jitter > d.p.Delay:
			return fmt.Errorf("%s jitter %s is outside 0 to the delay %s: raise the delay or lower the jitter", d.name, d.p.Jitter, d.p.Delay)
		case math.IsNaN(d.p.Loss) || d.p.Loss < 0 || d.p.Loss > 1:
			return fmt.Errorf("%s loss %v is outside 0 to 1 (0 %% to 100 %%)", d.name, d.p.Loss)
		}
	}
	return nil
}

func parsePercent(s string) (float64, error) {
	num, ok := strings.CutSuffix(s, "%")
	if !ok {
		return 0, fmt.Errorf("loss %q has no %%: write a percentage such as 0.03%%", s)
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("loss %q is not a number: write a percentage such as 0.03%%", s)
	}
	if f < 0 || f > 100 {
		return 0, fmt.Errorf("loss %q is outside 0%% to 100%%", s)
	}
	return f / 100, nil
}

func formatPercent(f float64) string {
	// Rounded to 1e-6 %: 0.0002*100 is 0.020000000000000004 in binary.
	return strconv.FormatFloat(math.Round(f*1e8)/1e6, 'f', -1, 64) + "%"
}
