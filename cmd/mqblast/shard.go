package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/mqblast/mqblast/result"
)

// The environment --shard auto reads: a Kubernetes Indexed Job sets JOB_COMPLETION_INDEX
// in every pod; Kubernetes does not set the count, so the Job's manifest sets
// JOB_COMPLETIONS to the same value as its completions (deploy/kubernetes).
const (
	envShardIndex = "JOB_COMPLETION_INDEX"
	envShardCount = "JOB_COMPLETIONS"
)

// resolveShard turns --shard auto into I/N from the environment (getenv).
func resolveShard(rf *runFlags, getenv func(string) string) error {
	if rf.shard != "auto" {
		return nil
	}
	i, n := strings.TrimSpace(getenv(envShardIndex)), strings.TrimSpace(getenv(envShardCount))
	var missing []string
	if i == "" {
		missing = append(missing, envShardIndex)
	}
	if n == "" {
		missing = append(missing, envShardCount)
	}
	if len(missing) > 0 {
		verb := " is"
		if len(missing) > 1 {
			verb = " are"
		}
		return usageError(fmt.Errorf("--shard auto takes the shard from %s and the shard count from %s, but %s not set "+
			"(a Kubernetes Indexed Job sets %s; its manifest must set %s to the Job's completions), or give --shard I/N",
			envShardIndex, envShardCount, strings.Join(missing, " and ")+verb, envShardIndex, envShardCount))
	}
	spec := i + "/" + n
	if _, _, err := parseShard(spec); err != nil {
		return usageError(fmt.Errorf("--shard auto: %s=%q and %s=%q: want 0 <= index < count", envShardIndex, i, envShardCount, n))
	}
	rf.shard = spec
	return nil
}

// startAt is --start-at: the wall-clock instant at which publishing starts, and when this
// run was ready for it.
type startAt struct {
	at      time.Time
	readyAt time.Time
}

// parseStartAt reads --start-at: RFC 3339 or +DURATION from now.
func parseStartAt(s string, now time.Time) (*startAt, error) {
	if d, ok := strings.CutPrefix(s, "+"); ok {
		v, err := time.ParseDuration(d)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("--start-at %q: want an RFC 3339 time (2026-01-02T15:04:05Z) or +DURATION from now (+90s)", s)
		}
		return &startAt{at: now.Add(v)}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return nil, fmt.Errorf("--start-at %q: want an RFC 3339 time (2026-01-02T15:04:05Z) or +DURATION from now (+90s)", s)
	}
	return &startAt{at: t}, nil
}

// ready records that the run is ready to publish now and returns when to start: at, or
// now when at has passed (late rather than never, said on w).
func (s *startAt) ready(w io.Writer) time.Time {
	s.readyAt = time.Now()
	if late := s.readyAt.Sub(s.at); late > 0 {
		fmt.Fprintf(w, "warning: subscribed at %s, %v after --start-at %s: publishing starts now, late (start.late_ms)\n",
			s.readyAt.UTC().Format(time.RFC3339Nano), late.Round(time.Millisecond), s.at.UTC().Format(time.RFC3339Nano))
		return s.readyAt
	}
	fmt.Fprintf(w, "subscribed: publishing starts at %s (in %v)\n", s.at.UTC().Format(time.RFC3339Nano),
		time.Until(s.at).Round(time.Millisecond))
	return s.at
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
