package bench

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/reactor"
	"github.com/mqblast/mqblast/scenario"
)

// arrivalSeen is one message as a subscriber outside the run saw it: when it arrived and
// the due time its header carries (the low 48 bits of CLOCK_REALTIME ns).
type arrivalSeen struct {
	at, due int64
	seq     uint32
	topic   string
}

// arrivalCollector subscribes a paho.golang client outside the run to filter on addr and
// returns what it received so far, by publisher number.
func arrivalCollector(t *testing.T, addr, filter string) func() map[uint32][]arrivalSeen {
	t.Helper()
	var mu sync.Mutex
	got := map[uint32][]arrivalSeen{}
	pahoSubscribed(t, addr, "ext-arrivals", filter, func(p *paho.Publish) {
		at := time.Now().UnixNano()
		_, pub, seq, ok := reactor.ReadHeader(p.Payload)
		if !ok {
			return
		}
		due := int64(binary.BigEndian.Uint64(p.Payload[0:8]) >> 16)
		mu.Lock()
		got[pub] = append(got[pub], arrivalSeen{at: at, due: due, seq: seq, topic: p.Topic})
		mu.Unlock()
	})
	return func() map[uint32][]arrivalSeen {
		mu.Lock()
		defer mu.Unlock()
		out := make(map[uint32][]arrivalSeen, len(got))
		for k, v := range got {
			out[k] = append([]arrivalSeen(nil), v...)
		}
		return out
	}
}

// arrivalRun runs a Point-To-Point scenario of pubs publishers at rate with arrival (and
// burst_size) against Mosquitto, with a subscriber outside the run on arr/#; it checks the
// run's own accounting (every expected copy received, none lost) and returns what the
// outside subscriber saw.
func arrivalRun(t *testing.T, pubs int, rate float64, arrival string, burst int, dur time.Duration) map[uint32][]arrivalSeen {
	t.Helper()
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	outside := arrivalCollector(t, m.Addr, "arr/#")
	extra := ""
	if burst > 0 {
		extra = fmt.Sprintf(`, "burst_size": %d`, burst)
	}
	data := fmt.Sprintf(`{
  "type": "Point-To-Point",
  "publishers":  {"client_count": %d, "qos": 1, "topics": "arr/$clientindex", "arrival": %q%s},
  "subscribers": {"client_count": %d, "qos": 1, "topics": "arr/$clientindex"},
  "parameters":  {"publish_rate": %v, "duration_sec": %v, "warmup_sec": 0.5, "drain_sec": 2, "payload_size": 32}
}`, pubs, arrival, extra, pubs, rate, dur.Seconds())
	s, err := scenario.Parse("arrival.json", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	res := runPlanned(t, m.Addr, s, nil)
	msg := res.Messages
	if msg.Published == 0 || msg.Received != msg.Expected || msg.Lost != 0 || msg.Scheduled != msg.Published+msg.UnsentTotal {
		t.Fatalf("scheduled %d published %d unsent %d expected %d received %d lost %d: want every message accounted and received",
			msg.Scheduled, msg.Published, msg.UnsentTotal, msg.Expected, msg.Received, msg.Lost)
	}
	var seen map[uint32][]arrivalSeen
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		seen = outside()
		n := 0
		for _, v := range seen {
			n += len(v)
		}
		if int64(n) >= msg.Published || time.Now().After(deadline) {
			if int64(n) != msg.Published {
				t.Errorf("the outside subscriber got %d messages, the run published %d", n, msg.Published)
			}
			break
		}
	}
	t.Logf("scheduled %d published %d unsent %d expected %d received %d", msg.Scheduled, msg.Published, msg.UnsentTotal, msg.Expected, msg.Received)
	return seen
}

// TestPoissonArrivalsAtSubscriber: Poisson arrivals as a subscriber outside the run sees
// them on Mosquitto: the gaps between a publisher's due times (read from the headers of
// the messages it received) have a coefficient of variation between 0.9 and 1.1 (a
// constant schedule's is 0) and a mean rate within 2 % of publish_rate, and so do the gaps
// between their arrivals there (logged: they add the host's scheduling noise); the run
// itself receives every expected copy, and scheduled = published + unsent.
func TestPoissonArrivalsAtSubscriber(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against Mosquitto")
	}
	const pubs, rate = 10, 400.0
	seen := arrivalRun(t, pubs, rate, "poisson", 0, 5*time.Second)
	var due, at gapStats
	for pub, v := range seen {
		if len(v) < 1000 {
			t.Errorf("publisher %d: %d messages seen", pub, len(v))
			continue
		}
		for i := 1; i < len(v); i++ {
			if v[i].seq != v[i-1].seq+1 {
				t.Fatalf("publisher %d: message %d after %d", pub, v[i].seq, v[i-1].seq)
			}
			due.add(float64(v[i].due - v[i-1].due))
			at.add(float64(v[i].at - v[i-1].at))
		}
	}
	cv, got := due.cvRate()
	acv, agot := at.cvRate()
	t.Logf("%v gaps seen outside: due times: mean rate %.2f/s per publisher (asked %v), CV %.3f; arrivals: %.2f/s, CV %.3f",
		due.n, got, rate, cv, agot, acv)
	if cv < 0.9 || cv > 1.1 {
		t.Errorf("inter-arrival CV %.3f of the due times seen outside, want 0.9 to 1.1", cv)
	}
	if math.Abs(got-rate)/rate > 0.02 {
		t.Errorf("mean rate %.2f/s per publisher of the due times seen outside, want %v within 2 %%", got, rate)
	}
	if math.Abs(agot-rate)/rate > 0.02 {
		t.Errorf("mean rate %.2f/s per publisher of the arrivals seen outside, want %v within 2 %%", agot, rate)
	}
}

// gapStats sums gaps (ns) for their mean and coefficient of variation.
type gapStats struct{ sum, sq, n float64 }

func (g *gapStats) add(x float64) { g.sum, g.sq, g.n = g.sum+x, g.sq+x*x, g.n+1 }

// cvRate returns the gaps' coefficient of variation and the rate of their mean (per s).
func (g *gapStats) cvRate() (cv, rate float64) {
	mean := g.sum / g.n
	return math.Sqrt(g.sq/g.n-mean*mean) / mean, 1e9 / mean
}

// TestBurstArrivalsAtSubscriber: arrival "burst" sends burst_size messages due at one
// instant, burst_size/publish_rate apart: a subscriber outside the run sees each
// publisher's due times in groups of exactly that many, spaced by the burst's interval,
// and the run receives every expected copy.
func TestBurstArrivalsAtSubscriber(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against Mosquitto")
	}
	const pubs, rate, burst = 4, 100.0, 20
	interval := int64(float64(burst) / rate * 1e9)
	seen := arrivalRun(t, pubs, rate, "burst", burst, 3*time.Second)
	for pub, v := range seen {
		groups := 0
		for i := 0; i < len(v); {
			j := i
			for j < len(v) && v[j].due == v[i].due {
				j++
			}
			full := j < len(v) || (j-i) == burst // the last burst may be cut by the run's end
			if j-i != burst && full && i != 0 {
				t.Errorf("publisher %d: a burst of %d messages due at once, want %d", pub, j-i, burst)
			}
			if j < len(v) {
				if d := v[j].due - v[i].due; d < interval-1 || d > interval+1 {
					t.Errorf("publisher %d: bursts %v apart, want %v", pub, time.Duration(d), time.Duration(interval))
				}
			}
			groups++
			i = j
		}
		if groups < 10 {
			t.Errorf("publisher %d: %d bursts seen", pub, groups)
		}
	}
}
