package run

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/run/spec"
	"github.com/mqblast/mqblast/scenario"
)

// The environment resolveShard reads for --shard auto: a Kubernetes Indexed Job sets
// JOB_COMPLETION_INDEX in every pod; Kubernetes does not set the count, so the Job's manifest
// sets JOB_COMPLETIONS to the same value as its completions (deploy/kubernetes).
const (
	EnvShardIndex = "JOB_COMPLETION_INDEX"
	EnvShardCount = "JOB_COMPLETIONS"
)

// resolveShard turns a --shard of "auto" into I/N from the environment (getenv); any other
// value is returned as it is.
func resolveShard(shard string, getenv func(string) string) (string, error) {
	if shard != "auto" {
		return shard, nil
	}
	i, n := getenv(EnvShardIndex), getenv(EnvShardCount)
	var missing []string
	if i == "" {
		missing = append(missing, EnvShardIndex)
	}
	if n == "" {
		missing = append(missing, EnvShardCount)
	}
	if len(missing) > 0 {
		verb := " is"
		if len(missing) > 1 {
			verb = " are"
		}
		return "", usage(spec.Errorf("shard", "{shard} auto takes the shard from %s and the shard count from %s, but %s not set "+
			"(a Kubernetes Indexed Job sets %s; its manifest must set %s to the Job's completions), or give {shard} I/N",
			EnvShardIndex, EnvShardCount, strings.Join(missing, " and ")+verb, EnvShardIndex, EnvShardCount))
	}
	if !isDigits(i) {
		return "", usage(spec.Errorf("shard", "{shard} auto: %s=%q is not a shard index: want digits alone, no blank or sign "+
			"(e.g. \"1\"); leave it to the Kubernetes Indexed Job, which sets it so", EnvShardIndex, i))
	}
	if !isDigits(n) {
		return "", usage(spec.Errorf("shard", "{shard} auto: %s=%q is not a shard count: want digits alone, no blank or sign "+
			"(e.g. \"3\"); set it in the Job's manifest to the Job's completions", EnvShardCount, n))
	}
	sh := i + "/" + n
	if _, err := parseShard(sh); err != nil {
		return "", usage(spec.Errorf("shard", "{shard} auto: %s=%q and %s=%q: want 0 <= index < count", EnvShardIndex, i, EnvShardCount, n))
	}
	return sh, nil
}

// parseShard reads a shard, I/N.
func parseShard(s string) (*result.ShardInfo, error) {
	i, n, err := spec.ParseShard(s)
	if err != nil {
		return nil, usage(spec.Errorf("shard", "{shard} %q: want I/N with 0 <= I < N, e.g. 0/4", s))
	}
	return &result.ShardInfo{Index: i, Count: n}, nil
}

// checkShard refuses a shard count that leaves shards of plan (the whole plan) without a
// client: such a shard connects nothing and fails with nothing to say why. Shard cuts
// each group of the plan evenly, so every shard has a client when the count is at most
// the largest group's size (Plan.MaxShards).
func checkShard(plan *scenario.Plan, sh *result.ShardInfo) error {
	most := plan.MaxShards()
	if sh.Count <= most {
		return nil
	}
	return usage(spec.Errorf("shard", "{shard} %d/%d: the plan has %d clients, %d in its largest group, and each shard takes a slice "+
		"of every group: %d shards leave some without a client (this one gets %d); give at most %d shards "+
		"({shard} I/%d, or %s=%d with {shard} auto)", sh.Index, sh.Count, plan.Len(), most, sh.Count,
		plan.Shard(sh.Index, sh.Count).Len(), most, most, EnvShardCount, most))
}

// startAt is --start-at: the wall-clock instant at which publishing starts, and when this
// run was ready for it.
type startAt struct {
	at      time.Time
	readyAt time.Time
}

// Bounds of --start-at around now: an instant further ahead would hold every connection
// that long before publishing; one further past is a mistake (the date, the time zone),
// not a shard that was ready late.
const (
	maxStartAhead = 24 * time.Hour
	maxStartLate  = 10 * time.Minute
)

// parseStartAt reads --start-at: RFC 3339 or +DURATION from now, from maxStartLate before
// now to maxStartAhead after it.
func parseStartAt(s string, now time.Time) (*startAt, error) {
	var at time.Time
	if d, ok := strings.CutPrefix(s, "+"); ok {
		v, err := time.ParseDuration(d)
		if err != nil || v < 0 {
			return nil, usage(spec.Errorf("start_at", "{start_at} %q: want an RFC 3339 time (2026-01-02T15:04:05Z) or +DURATION from now (+90s)", s))
		}
		at = now.Add(v)
	} else {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return nil, usage(spec.Errorf("start_at", "{start_at} %q: want an RFC 3339 time (2026-01-02T15:04:05Z) or +DURATION from now (+90s)", s))
		}
		at = t
	}
	switch d := at.Sub(now); {
	case d > maxStartAhead:
		return nil, usage(spec.Errorf("start_at", "{start_at} %q is %v from now, more than %v ahead: every connection would be held "+
			"that long before publishing; give an instant within %v (e.g. +90s), and check the date and the time zone "+
			"(Z is UTC)", s, d.Round(time.Second), maxStartAhead, maxStartAhead))
	case -d > maxStartLate:
		return nil, usage(spec.Errorf("start_at", "{start_at} %q was %v ago, more than %v: a shard ready after the instant starts at "+
			"once, late, but not that late; give a later instant (e.g. +90s), and check the date and the time zone "+
			"(Z is UTC)", s, (-d).Round(time.Second), maxStartLate))
	}
	return &startAt{at: at}, nil
}

// At is the instant publishing is to start.
func (s *startAt) At() time.Time { return s.at }

// ready records that the run is ready to publish now and returns when to start: at, or
// now when at has passed (late rather than never, said on w).
func (s *startAt) ready(w io.Writer) time.Time {
	s.readyAt = time.Now()
	if late := s.readyAt.Sub(s.at); late > 0 {
		fmt.Fprintf(w, "warning: subscribed at %s, %v after --start-at %s: publishing starts now, late (start.late_ms)\n",
			s.readyAt.UTC().Format(time.RFC3339Nano), late.Round(time.Millisecond), s.at.UTC().Format(time.RFC3339Nano))
		return s.readyAt
	}
	fmt.Fprintf(w, "subscribed: holding the connections until %s (in %v), then publishing\n", s.at.UTC().Format(time.RFC3339Nano),
		time.Until(s.at).Round(time.Millisecond))
	return s.at
}

// announce says on w, before plan's clients connect, that they will hold their
// connections until the instant before publishing, or that a Connections scenario, which
// publishes nothing, does not wait for it.
func (s *startAt) announce(w io.Writer, plan *scenario.Plan, now time.Time) {
	if s == nil {
		return
	}
	at := s.at.UTC().Format(time.RFC3339Nano)
	switch d := s.at.Sub(now); {
	case plan.Holds():
		fmt.Fprintf(w, "note: --start-at %s is when publishing starts, and a %s scenario publishes nothing: "+
			"its clients connect now\n", at, plan.Scenario().Type)
	case d > 0:
		fmt.Fprintf(w, "--start-at: connecting %d clients now and holding their connections until %s (in %v), then publishing\n",
			plan.Len(), at, d.Round(time.Second))
	}
}

// info is the result's start record; nil without --start-at or when the run never got to
// publishing.
func (s *startAt) info() *result.StartInfo {
	if s == nil || s.readyAt.IsZero() {
		return nil
	}
	ms := max(s.readyAt.Sub(s.at), 0).Milliseconds()
	if s.readyAt.After(s.at) && ms == 0 {
		ms = 1 // late by less than a millisecond is late
	}
	return &result.StartInfo{At: s.at.UTC(), ReadyAt: s.readyAt.UTC(), LateMS: ms}
}

// warnClock says on w that shards on several hosts start apart by up to the clock's error.
func warnClock(w io.Writer, c *result.Clock) {
	switch {
	case c == nil:
		fmt.Fprintln(w, "warning: --start-at: the kernel does not report this host's clock error (adjtimex); shards on other hosts may start apart")
	case !c.Synchronized:
		fmt.Fprintf(w, "warning: --start-at: this host's clock is not synchronised (no NTP: adjtimex STA_UNSYNC, max error %s µs); "+
			"shards on other hosts start apart by up to that error\n", strconv.FormatInt(c.MaxErrorUS, 10))
	}
}

func isDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}
