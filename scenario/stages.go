package scenario

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/mqblast/mqblast/internal/strictjson"
)

// Stage is one stage of a run whose offered rate changes while its connections stay up
// ("parameters.stages", mqblast's addition): for Duration, every publisher publishes at
// PublishRate messages per second, reached by a step at the stage's start or, with Ramp,
// linearly over the stage from the previous stage's rate (0 before the first stage).
type Stage struct {
	Duration    time.Duration // "duration_sec": > 0
	PublishRate float64       // "publish_rate": messages per second of each publisher, ≥ 0
	Ramp        bool          // "ramp": reach PublishRate linearly over the stage, not in a step
}

// StagesSyntax is the compact form of a stage list that --stages and --set
// parameters.stages take (ParseStages), for messages and help texts.
const StagesSyntax = "DURATION:RATE or DURATION:ramp:RATE, comma-separated (RATE per publisher per second), e.g. 10s:1000,30s:ramp:20000,10s:500"

// ParseStages reads the compact form of a stage list: stages separated by commas, each
// DURATION:RATE (a step to RATE at the stage's start) or DURATION:ramp:RATE (linear from the
// previous stage's rate to RATE over the stage). DURATION is a Go duration ("30s", "1m30s")
// or seconds ("30", "0.5"); RATE is messages per second of each publisher ("1000" or
// "1000/s"). Its error names the stage at fault and the syntax. Ranges are Validate's.
func ParseStages(s string) ([]Stage, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("no stage given (want %s)", StagesSyntax)
	}
	var out []Stage
	for i, item := range strings.Split(s, ",") {
		st, err := parseStage(strings.TrimSpace(item))
		if err != nil {
			return nil, fmt.Errorf("stage %d %q: %w (want %s)", i+1, strings.TrimSpace(item), err, StagesSyntax)
		}
		out = append(out, st)
	}
	return out, nil
}

func parseStage(item string) (Stage, error) {
	parts := strings.Split(item, ":")
	var st Stage
	switch {
	case item == "":
		return st, errors.New("empty")
	case len(parts) == 3 && strings.EqualFold(strings.TrimSpace(parts[1]), "ramp"):
		st.Ramp = true
		parts = []string{parts[0], parts[2]}
	case len(parts) == 3:
		return st, fmt.Errorf("%q is not \"ramp\"", strings.TrimSpace(parts[1]))
	case len(parts) != 2:
		return st, errors.New("is not DURATION:RATE")
	}
	d, ok := seconds(strings.TrimSpace(parts[0]))
	if !ok {
		if _, err := strconv.ParseFloat(strings.TrimSpace(parts[0]), 64); err == nil {
			d, ok = seconds(json.Number(strings.TrimSpace(parts[0])))
		}
	}
	if !ok {
		return st, fmt.Errorf("%q is not a duration (want a Go duration such as 30s, or seconds)", strings.TrimSpace(parts[0]))
	}
	r := strings.TrimSuffix(strings.TrimSpace(parts[1]), "/s")
	rate, err := strconv.ParseFloat(r, 64)
	if err != nil || math.IsNaN(rate) || math.IsInf(rate, 0) {
		return st, fmt.Errorf("%q is not a rate (want messages per second of each publisher, e.g. 1000 or 1000/s)", strings.TrimSpace(parts[1]))
	}
	st.Duration, st.PublishRate = d, rate
	return st, nil
}

// FormatStages writes stages in the compact form ParseStages reads.
func FormatStages(stages []Stage) string {
	var b strings.Builder
	for i, st := range stages {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(st.Duration.String())
		if st.Ramp {
			b.WriteString(":ramp")
		}
		b.WriteByte(':')
		b.WriteString(strconv.FormatFloat(st.PublishRate, 'f', -1, 64))
	}
	return b.String()
}

// StagesTotal returns the sum of the stages' durations: a staged run's publishing time.
func StagesTotal(stages []Stage) time.Duration {
	var d time.Duration
	for _, st := range stages {
		d += st.Duration
	}
	return d
}

// StagesPeak returns the highest rate of the stages: a staged run's publish_rate, the rate
// its schedule is built for and its estimates assume.
func StagesPeak(stages []Stage) float64 {
	peak := 0.0
	for _, st := range stages {
		peak = max(peak, st.PublishRate)
	}
	return peak
}

// decodeStages reads "stages": a list of {"duration_sec", "publish_rate", "ramp"} objects,
// or a string in the compact form (ParseStages).
func decodeStages(d *[]Stage, v any, path string, l *errList) {
	if s, ok := v.(string); ok {
		st, err := ParseStages(s)
		if err != nil {
			l.Add(path, "%v", err)
			return
		}
		*d = st
		return
	}
	arr, ok := v.([]any)
	if !ok {
		l.Add(path, "%s is not a stage list (want [{\"duration_sec\": 10, \"publish_rate\": 1000}, ...] or %q)", show(v),
			"10s:1000,30s:ramp:20000")
		return
	}
	out := make([]Stage, 0, len(arr))
	n := len(l.Errs)
	defer func() {
		if len(l.Errs) == n { // a list with a bad stage keeps the default, as any field
			*d = out
		}
	}()
	for i, e := range arr {
		p := strictjson.Index(path, i)
		obj, ok := e.(*object)
		if !ok {
			l.Add(p, "%s is not a stage (want {\"duration_sec\": 10, \"publish_rate\": 1000, \"ramp\": false})", show(e))
			continue
		}
		var st Stage
		var hasDur, hasRate bool
		strictjson.Fields(obj, p, []string{"duration_sec", "publish_rate", "ramp"}, l, func(key string, v any, path string) {
			switch key {
			case "duration_sec":
				hasDur = true
				decodeValue(&st.Duration, v, path, l)
			case "publish_rate":
				hasRate = true
				decodeValue(&st.PublishRate, v, path, l)
			default:
				decodeValue(&st.Ramp, v, path, l)
			}
		})
		if !hasDur {
			l.Add(p+".duration_sec", "missing (want the stage's length in seconds, or a Go duration such as \"30s\")")
		}
		if !hasRate {
			l.Add(p+".publish_rate", "missing (want messages per second of each publisher)")
		}
		out = append(out, st)
	}
}

// checkStages checks parameters.stages: at least one stage, each with a duration > 0 and a
// rate from 0 to the most one publisher sends, some stage with a rate > 0, a total that
// fits a time span, a warm-up inside the first stage, and a type that publishes.
func (s *Scenario) checkStages(l *errList, msgs bool) {
	p := &s.Parameters
	const pp = "parameters.stages"
	if p.Stages == nil {
		return
	}
	switch {
	case !msgs:
		l.Add(pp, "given, but %s publishes no messages (leave stages out)", s.typeName())
		return
	case len(p.Stages) == 0:
		l.Add(pp, "an empty list (want at least one stage, e.g. [{\"duration_sec\": 30, \"publish_rate\": 100}])")
		return
	}
	var total time.Duration
	for i, st := range p.Stages {
		at := fmt.Sprintf("%s[%d]", pp, i)
		if st.Duration <= 0 {
			l.Add(at+".duration_sec", "%s is not a stage duration (must be > 0)", show(st.Duration))
		}
		switch {
		case !(st.PublishRate >= 0) || math.IsInf(st.PublishRate, 0):
			l.Add(at+".publish_rate", "%s is not a rate (must be ≥ 0)", show(st.PublishRate))
		case st.PublishRate > MaxPublishRate:
			l.Add(at+".publish_rate", "%s is more than one publisher can send (max %d msgs/s)", show(st.PublishRate), MaxPublishRate)
		}
		total += max(st.Duration, 0)
		if total > maxSpan || total < 0 {
			l.Add(pp, "the stages last more than %v in all", maxSpan)
			return
		}
	}
	if StagesPeak(p.Stages) == 0 {
		l.Add(pp, "every stage's publish_rate is 0: nothing would be published (give one stage a rate > 0)")
	}
	if first := p.Stages[0].Duration; p.Warmup > 0 && first > 0 && p.Warmup >= first {
		l.Add("parameters.warmup_sec", "%s reaches past the first stage (%s s): with stages the warm-up is the start of the first stage",
			show(p.Warmup), show(first))
	}
}
