package run

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestResolveShardAuto: --shard auto reads the Indexed Job's variables; without them it is
// a usage error that names both.
func TestResolveShardAuto(t *testing.T) {
	check := func(env map[string]string, want string, wantErr ...string) {
		t.Helper()
		shard, err := ResolveShard("auto", func(k string) string { return env[k] })
		if len(wantErr) == 0 {
			if err != nil || shard != want {
				t.Errorf("env %v: shard %q, err %v; want %q", env, shard, err, want)
			}
			return
		}
		if err == nil || !errors.Is(err, ErrUsage) {
			t.Fatalf("env %v: err %v, want a usage error", env, err)
		}
		for _, w := range wantErr {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("env %v: %q does not say %q", env, err, w)
			}
		}
	}
	check(map[string]string{"JOB_COMPLETION_INDEX": "2", "JOB_COMPLETIONS": "3"}, "2/3")
	check(nil, "", "JOB_COMPLETION_INDEX and JOB_COMPLETIONS are not set")
	check(map[string]string{"JOB_COMPLETION_INDEX": "0"}, "", "JOB_COMPLETIONS is not set")
	check(map[string]string{"JOB_COMPLETION_INDEX": "3", "JOB_COMPLETIONS": "3"}, "", "want 0 <= index < count")
	if shard, err := ResolveShard("1/4", func(string) string { return "" }); err != nil || shard != "1/4" {
		t.Errorf("--shard 1/4 became %q (%v)", shard, err)
	}
}

// TestParseStartAt: RFC 3339 or +DURATION.
func TestParseStartAt(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"+90s":                        now.Add(90 * time.Second),
		"2026-01-02T03:10:00Z":        time.Date(2026, 1, 2, 3, 10, 0, 0, time.UTC),
		"2026-01-02T04:10:00.5+01:00": time.Date(2026, 1, 2, 3, 10, 0, 5e8, time.UTC),
	} {
		s, err := ParseStartAt(in, now)
		if err != nil || !s.At().Equal(want) {
			t.Errorf("%q: %v, %v; want %v", in, s, err, want)
		}
	}
	for _, in := range []string{"90s", "+-3s", "tomorrow", "2026-01-02 03:10"} {
		if _, err := ParseStartAt(in, now); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}
