package main

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/result"
)

// foreignP2P runs quick-p2p-100 for 3 s (1 s warm-up) at QoS 0 and at QoS 1 against f
// through the binary. Each run must end with exit 0 and one result document whose
// accounting identities hold (result.CheckDocument), and the broker must have delivered;
// what it did (received, lost, duplicated, errors) is logged either way, so that a
// broker's failure is reported with its figures, not hidden behind a skip.
func foreignP2P(t *testing.T, f *testbroker.Foreign) map[int]*result.Result {
	t.Helper()
	out := map[int]*result.Result{}
	for _, qos := range []int{0, 1} {
		q := fmt.Sprint(qos)
		r := runBin(t, "run", "quick-p2p-100", "--broker", f.Addr, "--duration", "3s",
			"--set", "parameters.warmup_sec=1", "--set", "publishers.qos="+q, "--set", "subscribers.qos="+q,
			"--no-check", "--format", "json")
		if r.code != 0 {
			t.Errorf("%s %s, QoS %d: exit %d\nstderr: %s", f.Kind, f.Version, qos, r.code, tailText(r.stderr, 3000))
		}
		if strings.TrimSpace(r.stdout) == "" {
			continue
		}
		if err := result.CheckDocument([]byte(r.stdout)); err != nil {
			t.Errorf("%s %s, QoS %d: the result's accounting does not hold:\n%v", f.Kind, f.Version, qos, err)
		}
		res := decodeResult(t, r)
		out[qos] = res
		m := res.Messages
		t.Logf("%s %s, QoS %d: published %d, acked %d, expected %d, received %d, lost %d, in flight at end %d, duplicated %d, out of order %d, unexpected %d; connections %d/%d; errors: %s",
			f.Kind, f.Version, qos, m.Published, m.Acked, m.Expected, m.Received, m.Lost, m.InFlightAtEnd, m.Duplicated, m.OutOfOrder,
			m.UnexpectedTotal, res.Connections.Established, res.Connections.Target, errorsText(res))
		if m.Received == 0 {
			t.Errorf("%s %s, QoS %d: nothing arrived of %d published\nstderr: %s", f.Kind, f.Version, qos, m.Published, tailText(r.stderr, 3000))
		}
	}
	return out
}

// errorsText lists a result's errors as kind=count, or "none".
func errorsText(res *result.Result) string {
	if len(res.Errors) == 0 {
		return "none"
	}
	var s []string
	for _, e := range res.Errors {
		s = append(s, fmt.Sprintf("%s=%d", e.Kind, e.Count))
	}
	sort.Strings(s)
	return strings.Join(s, ", ")
}

// tailText is the last n bytes of s.
func tailText(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
