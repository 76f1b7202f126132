package run

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/scenario"
)

// Overrides are the changes the command line makes to a scenario before it runs.
type Overrides struct {
	Sets     []string      // path=value (--set)
	Duration time.Duration // parameters.duration_sec, when > 0 (--duration)
	Brokers  []string      // the server (--broker)
	Bind     []string      // source addresses, ranges, CIDRs or interfaces (--bind)
	BindFlag string        // the name of the flag of Bind: --bind (the default), or --ifaddr
	Sink     bool          // the run goes to the sink on loopback (--sink), not to the scenario's server
	// Stages replaces parameters.stages with a stage list in the compact form
	// (scenario.ParseStages), when not empty (--stages).
	Stages string
}

// Apply applies the overrides to s. A field the scenario cannot take makes it invalid
// (ErrInvalid); a --set without "=", a broker or a bind list it cannot read is a usage error.
func (ov Overrides) Apply(s *scenario.Scenario) error {
	for _, kv := range ov.Sets {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return usage(fmt.Errorf("--set %q: want path=value, e.g. parameters.connection_rate=500", RedactSet(kv)))
		}
		if err := s.Set(strings.TrimSpace(k), v); err != nil {
			return kind(ErrInvalid, err)
		}
	}
	if ov.Duration > 0 {
		if ov.Stages != "" {
			return usage(errors.New("--duration and --stages: the stages' total is the duration; give one of them"))
		}
		if err := s.Set("parameters.duration_sec", ov.Duration.String()); err != nil {
			return kind(ErrInvalid, err)
		}
	}
	if ov.Stages != "" {
		st, err := scenario.ParseStages(ov.Stages)
		if err != nil {
			return usage(fmt.Errorf("--stages %q: %w", ov.Stages, err))
		}
		s.Parameters.Stages = st
	}
	if len(ov.Brokers) > 0 {
		if err := s.SetBrokers(ov.Brokers); err != nil {
			return usage(err)
		}
	}
	return ov.applyBind(s)
}

// applyBind sets the source addresses of --bind on s, those of the brokers' address family
// (an interface such as lo has both), and refuses source addresses of another family, the
// scenario's own too: their clients could not connect.
func (ov Overrides) applyBind(s *scenario.Scenario) error {
	if len(ov.Bind) == 0 && len(s.Parameters.Bind) == 0 {
		return nil
	}
	flag := cmp.Or(ov.BindFlag, "--bind")
	what, mark := flag, usage
	if len(ov.Bind) == 0 {
		what, mark = s.File()+": parameters.bind", func(err error) error { return kind(ErrInvalid, err) }
	}
	var hosts []string
	if !ov.Sink {
		hosts = s.BrokerHosts()
	}
	fam, broker, err := brokerFamily(what, hosts)
	if err != nil {
		return mark(err)
	}
	if len(ov.Bind) > 0 {
		addrs, err := expandInterfaces(flag, ov.Bind, fam, broker)
		if err != nil {
			return usage(err)
		}
		if err := s.SetBind(addrs); err != nil {
			return usage(err)
		}
	}
	return mark(checkFamily(what, s.Parameters.Bind, fam, broker))
}

// RedactSet returns a --set argument fit for a message: the value of a password is hidden.
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

// Thresholds returns the thresholds of a run, the scenario's then extra (--threshold), and
// checks their syntax and paths before the run starts: a bad extra one is a usage error, a
// bad one in the scenario makes it invalid (ErrInvalid).
func Thresholds(s *scenario.Scenario, extra []string) ([]string, error) {
	if err := ScenarioThresholds(s); err != nil {
		return nil, kind(ErrInvalid, err)
	}
	var lines []string
	for _, e := range extra {
		if err := result.CheckThresholdPaths([]string{e}); err != nil {
			lines = append(lines, "--"+err.Error()) // `--threshold "expr": ...`
		}
	}
	if len(lines) > 0 {
		return nil, usage(fmt.Errorf("%s", strings.Join(lines, "\n")))
	}
	return append(append([]string(nil), s.Thresholds...), extra...), nil
}

// ScenarioThresholds checks the scenario's thresholds; each problem is one line that names
// the file and the list index, as scenario's own errors do.
func ScenarioThresholds(s *scenario.Scenario) error {
	var lines []string
	for i, e := range s.Thresholds {
		if err := result.CheckThresholdPaths([]string{e}); err != nil {
			lines = append(lines, fmt.Sprintf("%s: thresholds[%d]: %v", s.File(), i, err))
		}
	}
	if len(lines) == 0 {
		return nil
	}
	return fmt.Errorf("%s", strings.Join(lines, "\n"))
}

// Validate reads the scenario arg (a file or a built-in name), applies sets (path, value)
// and brokers as a run would, and checks it: every problem of the file and of its rules at
// once, then its plan and its thresholds.
func Validate(arg string, sets [][2]string, brokers []string) (*scenario.Scenario, *scenario.Plan, error) {
	s, err := scenario.ResolveAll(arg)
	if s == nil {
		return nil, nil, err
	}
	errs := []error{err} // decode problems: the rule checks run too (ValidateAfter)
	for _, o := range sets {
		if err := s.Set(o[0], o[1]); err != nil {
			errs = append(errs, err)
		}
	}
	if len(brokers) > 0 {
		if err := s.SetBrokers(brokers); err != nil {
			errs = append(errs, err)
		}
	}
	if err := s.ValidateAfter(errors.Join(errs...)); err != nil {
		return nil, nil, err
	}
	p, err := scenario.NewPlan(s)
	if err != nil {
		return nil, nil, err
	}
	if err := ScenarioThresholds(s); err != nil {
		return nil, nil, err
	}
	return s, p, nil
}

// ParseSets reads the --set PATH=VALUE words of Validate; one without "=" is a usage error.
func ParseSets(sets []string) ([][2]string, error) {
	out := make([][2]string, 0, len(sets))
	for _, kv := range sets {
		path, value, ok := strings.Cut(kv, "=")
		if !ok || path == "" {
			return nil, usage(fmt.Errorf("--set %q: want PATH=VALUE, e.g. parameters.publish_rate=10", RedactSet(kv)))
		}
		out = append(out, [2]string{path, value})
	}
	return out, nil
}

// ValidateAll validates each scenario of args (Validate), writes the size of the plan of
// each valid one on out and every problem of each invalid one on errOut, a line each, and
// returns how many are invalid.
func ValidateAll(out, errOut io.Writer, args []string, sets [][2]string, brokers []string) int {
	invalid := 0
	for _, arg := range args {
		if err := validateOne(out, arg, sets, brokers); err != nil {
			invalid++
			for _, line := range strings.Split(err.Error(), "\n") {
				fmt.Fprintln(errOut, line)
			}
		}
	}
	return invalid
}

// validateOne checks one scenario and prints its plan's size; it returns every problem.
func validateOne(w io.Writer, arg string, sets [][2]string, brokers []string) error {
	s, p, err := Validate(arg, sets, brokers)
	if err != nil {
		return err
	}
	scenario.WritePlanSize(w, arg, s, p)
	return nil
}
