package bench

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/eclipse/paho.golang/paho"

	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/internal/tier"
)

// requestJSON: ten MQTT 5 requesters at 20 requests/s each, answered by a respond group
// of two sharing "$share/rpc/rpc/req/+", and a 3.1.1 monitor that sees every request; QoS %s.
const requestJSON = `{
  "name": "rpc",
  "groups": [
    {"name": "requesters", "behaviours": "request", "client_count": 10, "protocol_version": 5, "qos": %[1]s,
     "topics": "rpc/req/$clientid", "response_topic": "rpc/resp/$clientid", "publish_rate": 20, "payload_size": 64},
    {"name": "responders", "behaviours": "respond", "client_count": 2, "protocol_version": 5, "qos": %[1]s,
     "filters": "$share/rpc/rpc/req/+"},
    {"name": "monitor", "behaviours": "subscribe", "client_count": 1, "qos": %[1]s, "filters": "rpc/req/#"}
  ],
  "parameters": {"duration_sec": 2, "warmup_sec": 0.5, "drain_sec": 2}
}`

// TestMixedRequestResponse: requests carry each requester's Response Topic and their
// header as Correlation Data; the respond group answers each once (shared), so every
// request is expected three times (at a responder, back at its requester, at the monitor)
// and, at QoS 1 and 2, all arrive. The requesters' latency is the round trip, longer than
// the way there that the responders' latency measures.
func TestMixedRequestResponse(t *testing.T) {
	tier.Timing(t) // every response sent within the drain: on shared cores, a race build falls behind
	for _, b := range twoBrokers(t) {
		for _, qos := range []string{"0", "1", "2"} {
			t.Run(b.name+"/qos"+qos, func(t *testing.T) {
				res := runJSON(t, b.addr, strings.ReplaceAll(requestJSON, "%[1]s", qos), nil)
				g := groupsByName(res)
				req, resp, mon := g["requesters"], g["responders"], g["monitor"]
				t.Logf("requesters published %d expected %d received %d lost %d; delivered: requesters %d responders %d monitor %d; "+
					"latency p50: round trip %d µs, there %d µs", req.Messages.Published, req.Messages.Expected, req.Messages.Received,
					req.Messages.Lost, req.Delivered, resp.Delivered, mon.Delivered, req.LatencyUS.P50, resp.LatencyUS.P50)
				checkGroupSums(t, res, qos != "0")
				p := req.Messages.Published
				if p < 300 || req.Messages.Expected != 3*p {
					t.Fatalf("requesters published %d, expected %d: want about 400 and 3 copies each", p, req.Messages.Expected)
				}
				if res.Messages.ResponsesUnsent != 0 || res.Messages.Lost != 0 {
					t.Errorf("responses unsent %d, lost %d; want none on loopback at this rate", res.Messages.ResponsesUnsent, res.Messages.Lost)
				}
				if req.Delivered != p || resp.Delivered != p || mon.Delivered != p {
					t.Errorf("delivered: requesters %d (responses) responders %d monitor %d; want %d each", req.Delivered, resp.Delivered, mon.Delivered, p)
				}
				if req.LatencyUS.Count == 0 || resp.LatencyUS.Count == 0 || req.LatencyUS.P50 <= resp.LatencyUS.P50 {
					t.Errorf("round trip p50 %d µs (%d), way there %d µs (%d): want the round trip longer",
						req.LatencyUS.P50, req.LatencyUS.Count, resp.LatencyUS.P50, resp.LatencyUS.Count)
				}
			})
		}
	}
}

// outsideJSON: requesters whose requests no group of the run answers: a responder outside
// the run (the test's own paho.golang client) is expected to.
const outsideJSON = `{
  "name": "rpc-outside",
  "groups": [
    {"name": "requesters", "behaviours": "request", "client_count": 5, "protocol_version": 5, "qos": 1,
     "topics": "ext/req/$clientindex", "response_topic": "ext/resp/$clientindex", "publish_rate": 20}
  ],
  "parameters": {"duration_sec": 1.5, "warmup_sec": 0.5, "drain_sec": 2}
}`

// TestRequestAnsweredOutside: a responder of another implementation (paho.golang) answers
// with a payload of its own and the request's Correlation Data, which alone carries the
// measurement: every request is answered, none lost, the round trip measured. With no
// responder at all every response is lost.
func TestRequestAnsweredOutside(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against Mosquitto")
	}
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	t.Run("none", func(t *testing.T) {
		res := runJSON(t, m.Addr, outsideJSON, nil)
		msg := res.Messages
		if msg.Published < 100 || msg.Expected != msg.Published || msg.Received != 0 || msg.Lost != msg.Published {
			t.Errorf("no responder: %+v; want every response expected and lost", msg)
		}
	})
	t.Run("paho", func(t *testing.T) {
		var answered atomic.Int64
		pahoResponder(t, m.Addr, "ext/req/+", &answered)
		res := runJSON(t, m.Addr, outsideJSON, nil)
		msg := res.Messages
		t.Logf("published %d expected %d received %d lost %d, answered %d; round trip p50 %d µs",
			msg.Published, msg.Expected, msg.Received, msg.Lost, answered.Load(), res.LatencyUS.P50)
		if msg.Published < 100 || msg.Expected != msg.Published || msg.Received != msg.Published || msg.Lost != 0 || msg.Unmeasured != 0 {
			t.Errorf("paho responder: %+v; want every response received and measured", msg)
		}
		if res.LatencyUS.Count == 0 || answered.Load() != msg.Published {
			t.Errorf("latency %+v, answered %d of %d", res.LatencyUS, answered.Load(), msg.Published)
		}
	})
}

// pahoResponder connects a paho.golang client to addr that answers every request on
// filter with "pong" at QoS 0 and the request's Correlation Data, counting them.
func pahoResponder(t *testing.T, addr, filter string, answered *atomic.Int64) {
	t.Helper()
	work, stop := make(chan *paho.Publish, 4096), make(chan struct{})
	c := pahoSubscribed(t, addr, "ext-responder", filter, func(p *paho.Publish) {
		select {
		case work <- p:
		case <-stop:
		}
	})
	done := make(chan struct{})
	go func() { // answers off the client's reading goroutine
		defer close(done)
		for {
			var p *paho.Publish
			select {
			case p = <-work:
			case <-stop:
				return
			}
			if p.Properties == nil || p.Properties.ResponseTopic == "" {
				continue
			}
			_, err := c.Publish(context.Background(), &paho.Publish{Topic: p.Properties.ResponseTopic, Payload: []byte("pong"),
				Properties: &paho.PublishProperties{CorrelationData: p.Properties.CorrelationData}})
			if err == nil {
				answered.Add(1)
			}
		}
	}()
	t.Cleanup(func() {
		close(stop)
		<-done
	})
}
