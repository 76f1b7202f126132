package run

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/run/spec"
	"github.com/mqblast/mqblast/scenario"
)

// changes are the changes the command line makes to a scenario before it runs.
type changes struct {
	Sets     []string      // path=value (--set)
	Duration time.Duration // parameters.duration_sec, when > 0 (--duration)
	Brokers  []string      // the server (--broker)
	Bind     []string      // source addresses, ranges, CIDRs or interfaces (--bind)
	Sink     bool          // the run goes to the sink on loopback (--sink), not to the scenario's server
	// Stages replaces parameters.stages with a stage list in the compact form
	// (scenario.ParseStages), when not empty (--stages).
	Stages string
	// Credentials replaces the scenario's credentials_file, when not empty (--credentials).
	Credentials string
	// TLS are the run's TLS settings: their client certificate, when they give one,
	// replaces the server's (clientCertOverride).
	TLS spec.TLS
}

// Apply applies the overrides to s. A field the scenario cannot take makes it invalid
// (errInvalid); a --set without "=", a broker or a bind list it cannot read is a usage error.
func (ov changes) Apply(s *scenario.Scenario) error {
	for i, kv := range ov.Sets {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return usage(spec.Errorf(fmt.Sprintf("scenario.set[%d]", i), "{scenario.set} %q: want path=value, e.g. parameters.connection_rate=500", spec.RedactSet(kv)))
		}
		if err := s.Set(strings.TrimSpace(k), v); err != nil {
			return kind(errInvalid, err)
		}
	}
	if ov.Credentials != "" {
		s.CredentialsFile = ov.Credentials
	}
	if ov.Duration > 0 {
		if err := s.Set("parameters.duration_sec", ov.Duration.String()); err != nil {
			return kind(errInvalid, err)
		}
	}
	if ov.Stages != "" {
		st, err := scenario.ParseStages(ov.Stages)
		if err != nil {
			return usage(spec.Errorf("stages", "{stages} %q: %v", ov.Stages, err))
		}
		s.Parameters.Stages = st
	}
	if c := clientCertOverride(ov.TLS, s); c.Given() {
		s.Server.ClientCert = c
	}
	if len(ov.Brokers) > 0 {
		if err := s.SetBrokers(ov.Brokers); err != nil {
			return usage(spec.Textf("brokers", strings.Replace(err.Error(), "--broker", "{brokers}", 1)))
		}
	}
	return ov.applyBind(s)
}

// applyBind sets the source addresses of --bind on s, those of the brokers' address family
// (an interface such as lo has both), and refuses source addresses of another family, the
// scenario's own too: their clients could not connect.
func (ov changes) applyBind(s *scenario.Scenario) error {
	if len(ov.Bind) == 0 && len(s.Parameters.Bind) == 0 {
		return nil
	}
	const flag = "{bind}"
	what, mark := flag, func(err error) error {
		if err == nil {
			return nil
		}
		return usage(spec.Textf("bind", err.Error()))
	}
	if len(ov.Bind) == 0 {
		what, mark = s.File()+": parameters.bind", func(err error) error { return kind(errInvalid, err) }
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
			return mark(err)
		}
		if err := s.SetBind(addrs); err != nil {
			return usage(spec.Textf("bind", strings.Replace(err.Error(), "--bind", "{bind}", 1)))
		}
	}
	return mark(checkFamily(what, s.Parameters.Bind, fam, broker))
}

// checkThresholds returns the thresholds of a run, the scenario's then extra (--threshold), and
// checks their syntax and paths before the run starts: a bad extra one is a usage error, a
// bad one in the scenario makes it invalid (errInvalid).
func checkThresholds(s *scenario.Scenario, extra []string) ([]string, error) {
	if err := scenarioThresholds(s); err != nil {
		return nil, kind(errInvalid, err)
	}
	var errs []error
	for i, e := range extra {
		if err := result.CheckThresholdPaths([]string{e}); err != nil { // `threshold "expr": ...`
			errs = append(errs, spec.Errorf(fmt.Sprintf("thresholds[%d]", i), "{thresholds}%s", strings.TrimPrefix(err.Error(), "threshold")))
		}
	}
	if len(errs) > 0 {
		return nil, usage(errors.Join(errs...))
	}
	return append(append([]string(nil), s.Thresholds...), extra...), nil
}

// scenarioThresholds checks the scenario's thresholds; each problem is one line that names
// the file and the list index, as scenario's own errors do.
func scenarioThresholds(s *scenario.Scenario) error {
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

// validateScenario reads the scenario arg (a file or a built-in name), applies sets
// (path, value) and brokers as a run would, and checks it: every problem of the file and of
// its rules at once, then its plan and its thresholds.
func validateScenario(arg string, sets [][2]string, brokers []string) (*scenario.Scenario, *scenario.Plan, error) {
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
	if err := scenarioThresholds(s); err != nil {
		return nil, nil, err
	}
	return s, p, nil
}

// Validate checks each scenario of args (a file or a built-in name) as a run would after
// the changes sets (PATH=VALUE) and brokers: it writes the size of the plan of each valid
// one on out and every problem of each invalid one on errOut, a line each, and returns how
// many are invalid. A change without "=" is a usage error that names the field.
func Validate(out, errOut io.Writer, args, sets, brokers []string) (int, error) {
	pairs := make([][2]string, 0, len(sets))
	for i, kv := range sets {
		path, value, ok := strings.Cut(kv, "=")
		if !ok || path == "" {
			return 0, usage(spec.Errorf(fmt.Sprintf("scenario.set[%d]", i), "{scenario.set} %q: want PATH=VALUE, e.g. parameters.publish_rate=10", spec.RedactSet(kv)))
		}
		pairs = append(pairs, [2]string{path, value})
	}
	invalid := 0
	for _, arg := range args {
		s, p, err := validateScenario(arg, pairs, brokers)
		if err != nil {
			invalid++
			for _, line := range strings.Split(err.Error(), "\n") {
				fmt.Fprintln(errOut, line)
			}
			continue
		}
		scenario.WritePlanSize(out, arg, s, p)
	}
	return invalid, nil
}
