package run

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/scenario"
)

// TestResolveShardAuto: --shard auto reads the Indexed Job's variables; without them it is
// a usage error that names both.
func TestResolveShardAuto(t *testing.T) {
	check := func(env map[string]string, want string, wantErr ...string) {
		t.Helper()
		shard, err := resolveShard("auto", func(k string) string { return env[k] })
		if len(wantErr) == 0 {
			if err != nil || shard != want {
				t.Errorf("env %v: shard %q, err %v; want %q", env, shard, err, want)
			}
			return
		}
		if err == nil || !errors.Is(err, errUsage) {
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
	if shard, err := resolveShard("1/4", func(string) string { return "" }); err != nil || shard != "1/4" {
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
		s, err := parseStartAt(in, now)
		if err != nil || !s.At().Equal(want) {
			t.Errorf("%q: %v, %v; want %v", in, s, err, want)
		}
	}
	for _, in := range []string{"90s", "+-3s", "tomorrow", "2026-01-02 03:10"} {
		if _, err := parseStartAt(in, now); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

// TestParseStartAtBounds: an instant more than a day ahead (every connection held that
// long) or more than ten minutes past (a mistake, not a late shard) is a usage error that
// says how far it is, the bound and the fix; instants inside the bounds are taken.
func TestParseStartAtBounds(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, in := range []string{"+24h", "+0s", "2026-01-03T03:04:05Z", "2026-01-02T02:55:05Z"} {
		if _, err := parseStartAt(in, now); err != nil {
			t.Errorf("%q refused: %v", in, err)
		}
	}
	for in, want := range map[string][]string{
		"+24h0m1s":             {`start_at "+24h0m1s" is 24h0m1s from now, more than 24h0m0s ahead`, "every connection would be held", "e.g. +90s"},
		"2026-01-05T03:04:05Z": {"is 72h0m0s from now, more than 24h0m0s ahead", "check the date and the time zone"},
		"2026-01-02T02:54:04Z": {`start_at "2026-01-02T02:54:04Z" was 10m1s ago, more than 10m0s`, "give a later instant"},
		"2025-01-02T03:04:05Z": {"was 8760h0m0s ago"},
	} {
		_, err := parseStartAt(in, now)
		if !errors.Is(err, errUsage) {
			t.Errorf("%q: %v, want a usage error", in, err)
			continue
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: %q does not say %q", in, err, w)
			}
		}
	}
}

// TestResolveShardStrict: --shard auto takes the Indexed Job's variables as Kubernetes
// writes them, digits alone: a blank or a sign is refused with the value quoted; --shard
// I/N too.
func TestResolveShardStrict(t *testing.T) {
	for env, want := range map[[2]string]string{
		{" 1", "3"}:  `JOB_COMPLETION_INDEX=" 1" is not a shard index: want digits alone`,
		{"1 ", "3"}:  `JOB_COMPLETION_INDEX="1 " is not a shard index`,
		{"+1", "3"}:  `JOB_COMPLETION_INDEX="+1" is not a shard index`,
		{"1", "3\n"}: `JOB_COMPLETIONS="3\n" is not a shard count: want digits alone`,
		{"0", "x"}:   `JOB_COMPLETIONS="x" is not a shard count`,
	} {
		_, err := resolveShard("auto", func(k string) string {
			return map[string]string{EnvShardIndex: env[0], EnvShardCount: env[1]}[k]
		})
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), want) {
			t.Errorf("env %q: %v, want a usage error saying %q", env, err, want)
		}
	}
	for _, s := range []string{"+1/3", " 1/3", "1/ 3", "-0/3", "1/+3"} {
		if _, err := parseShard(s); !errors.Is(err, errUsage) {
			t.Errorf("--shard %q: %v, want a usage error", s, err)
		}
	}
}

// TestCheckShard: a shard count beyond the plan's largest group leaves shards without a
// client and is refused, naming the plan's clients, the shard and the count to give.
func TestCheckShard(t *testing.T) {
	plan := func(t *testing.T, sets ...string) *scenario.Plan {
		t.Helper()
		s, err := scenario.Resolve("quick-fanin-100-1")
		if err != nil {
			t.Fatal(err)
		}
		if err := (changes{Sets: sets}).Apply(s); err != nil {
			t.Fatal(err)
		}
		p, err := scenario.NewPlan(s)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := plan(t, "publishers.client_count=8") // and one subscriber
	for _, n := range []int{1, 4, 8} {
		for i := range n {
			if err := checkShard(p, &result.ShardInfo{Index: i, Count: n}); err != nil {
				t.Errorf("shard %d/%d: %v", i, n, err)
			}
			if q := p.Shard(i, n); q.Len() == 0 {
				t.Errorf("shard %d/%d taken, but has no client", i, n)
			}
		}
	}
	err := checkShard(p, &result.ShardInfo{Index: 7, Count: 100})
	want := "shard 7/100: the plan has 9 clients, 8 in its largest group"
	if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "give at most 8 shards (shard I/8, or JOB_COMPLETIONS=8 with shard auto)") {
		t.Errorf("shard 7/100 of 9 clients: %v, want a usage error saying %q and the fix", err, want)
	}
	if err := checkShard(p, &result.ShardInfo{Index: 0, Count: 9}); err == nil {
		t.Error("9 shards of a largest group of 8: taken")
	}
}
