package run

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/mqblast/mqblast/result"
)

// The environment ResolveShard reads for --shard auto: a Kubernetes Indexed Job sets
// JOB_COMPLETION_INDEX in every pod; Kubernetes does not set the count, so the Job's manifest
// sets JOB_COMPLETIONS to the same value as its completions (deploy/kubernetes).
const (
	EnvShardIndex = "JOB_COMPLETION_INDEX"
	EnvShardCount = "JOB_COMPLETIONS"
)

// ResolveShard turns a --shard of "auto" into I/N from the environment (getenv); any other
// value is returned as it is.
func ResolveShard(shard string, getenv func(string) string) (string, error) {
	if shard != "auto" {
		return shard, nil
	}
	i, n := strings.TrimSpace(getenv(EnvShardIndex)), strings.TrimSpace(getenv(EnvShardCount))
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
		return "", usage(fmt.Errorf("--shard auto takes the shard from %s and the shard count from %s, but %s not set "+
			"(a Kubernetes Indexed Job sets %s; its manifest must set %s to the Job's completions), or give --shard I/N",
			EnvShardIndex, EnvShardCount, strings.Join(missing, " and ")+verb, EnvShardIndex, EnvShardCount))
	}
	spec := i + "/" + n
	if _, err := ParseShard(spec); err != nil {
		return "", usage(fmt.Errorf("--shard auto: %s=%q and %s=%q: want 0 <= index < count", EnvShardIndex, i, EnvShardCount, n))
	}
	return spec, nil
}

// ParseShard reads a --shard I/N.
func ParseShard(s string) (*result.ShardInfo, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return nil, usage(fmt.Errorf("--shard %q: want I/N with 0 <= I < N, e.g. 0/4", s))
	}
	return &result.ShardInfo{Index: i, Count: n}, nil
}

// StartAt is --start-at: the wall-clock instant at which publishing starts, and when this
// run was ready for it.
type StartAt struct {
	at      time.Time
	readyAt time.Time
}

// ParseStartAt reads --start-at: RFC 3339 or +DURATION from now.
func ParseStartAt(s string, now time.Time) (*StartAt, error) {
	if d, ok := strings.CutPrefix(s, "+"); ok {
		v, err := time.ParseDuration(d)
		if err != nil || v < 0 {
			return nil, usage(fmt.Errorf("--start-at %q: want an RFC 3339 time (2026-01-02T15:04:05Z) or +DURATION from now (+90s)", s))
		}
		return &StartAt{at: now.Add(v)}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return nil, usage(fmt.Errorf("--start-at %q: want an RFC 3339 time (2026-01-02T15:04:05Z) or +DURATION from now (+90s)", s))
	}
	return &StartAt{at: t}, nil
}

// At is the instant publishing is to start.
func (s *StartAt) At() time.Time { return s.at }

// ready records that the run is ready to publish now and returns when to start: at, or
// now when at has passed (late rather than never, said on w).
func (s *StartAt) ready(w io.Writer) time.Time {
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
func (s *StartAt) info() *result.StartInfo {
	if s == nil || s.readyAt.IsZero() {
		return nil
	}
	ms := max(s.readyAt.Sub(s.at), 0).Milliseconds()
	if s.readyAt.After(s.at) && ms == 0 {
		ms = 1 // late by less than a millisecond is late
	}
	return &result.StartInfo{At: s.at.UTC(), ReadyAt: s.readyAt.UTC(), LateMS: ms}
}

// WarnClock says on w that shards on several hosts start apart by up to the clock's error.
func WarnClock(w io.Writer, c *result.Clock) {
	switch {
	case c == nil:
		fmt.Fprintln(w, "warning: --start-at: the kernel does not report this host's clock error (adjtimex); shards on other hosts may start apart")
	case !c.Synchronized:
		fmt.Fprintf(w, "warning: --start-at: this host's clock is not synchronised (no NTP: adjtimex STA_UNSYNC, max error %s µs); "+
			"shards on other hosts start apart by up to that error\n", strconv.FormatInt(c.MaxErrorUS, 10))
	}
}
