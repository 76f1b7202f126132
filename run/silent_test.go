package run

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/result"
)

// The tests of silent publishers: loss confined to some publishers, their connections up.

// silentScenario is a scenario of type typ against broker: pubs publishers of MQTT 3.1.1
// at qos (20/s for 2 s) on devices/$clientindex/t, subscribers on filter; user bench's
// password from the environment; its document on stdout.
func silentScenario(typ string, qos, pubs, subs int, filter, broker string) *Spec {
	sp := quickFile("silent", broker, fmt.Sprintf(`{"name": "silent", "type": %q,
		"server": {"username": "bench"},
		"publishers": {"id_prefix": "pub-", "protocol_version": 4, "client_count": %d, "qos": %d, "topics": "devices/$clientindex/t"},
		"subscribers": {"id_prefix": "sub-", "protocol_version": 4, "client_count": %d, "qos": %d, "topics": %q},
		"parameters": {"connection_rate": 1000, "duration_sec": "2s", "warmup_sec": "500ms", "payload_size": 16,
			"publish_rate": 20, "drain_sec": "1s", "keep_alive_sec": 60}}`, typ, pubs, qos, subs, qos, filter), nil)
	sp.NoCheck, sp.Outputs.Format = true, "json"
	return sp
}

// silentNames are the client ids and topics the result names, "id on topic" each.
func silentNames(sp *result.SilentPublishers) []string {
	var out []string
	for _, e := range sp.Examples {
		out = append(out, e.ClientID+" on "+e.Topic)
	}
	return out
}

// TestSilentPublishersByACL: Mosquitto as operators set it up, a password file
// (mosquitto_passwd) and an ACL file that lets user bench read devices/# but write only
// some of the ten publishers' topics. Mosquitto drops an unauthorised publish without a
// word: at QoS 0, and at QoS 1 under MQTT 3.1.1, which it still acknowledges. The result
// names exactly the publishers whose topics are denied (pub-3 on devices/3/t, pub-7 on
// devices/7/t) as silent, the loss confined to them, and the summary says so; with every
// topic allowed nothing is silent and the summary has no such line. Before, the result
// said only that copies were lost.
func TestSilentPublishersByACL(t *testing.T) {
	t.Parallel()
	acl := []string{"user bench", "topic read devices/#"}
	for i := range 10 {
		if i != 3 && i != 7 {
			acl = append(acl, fmt.Sprintf("topic write devices/%d/t", i))
		}
	}
	const secret = "s3cret-acl"
	m := testbroker.StartMosquitto(t, testbroker.Options{Users: map[string]string{"bench": secret}, Extra: []string{aclFile(t, acl...)}})
	open := testbroker.StartMosquitto(t, testbroker.Options{Users: map[string]string{"bench": secret},
		Extra: []string{aclFile(t, "user bench", "topic readwrite devices/#")}})
	for _, c := range []struct {
		name string
		sp   *Spec
	}{
		{"p2p qos 1", silentScenario("Point-To-Point", 1, 10, 10, "devices/$clientindex/t", m.Addr)},
		{"fan-in qos 0", silentScenario("Fan-In", 0, 10, 1, "devices/#", m.Addr)},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := checkDoc(t, doOK(t, c.sp, PasswordEnv+"="+secret))
			msg := res.Messages
			sp := msg.Silent
			if sp == nil {
				t.Fatalf("no silent_publishers: lost %d of %d expected", msg.Lost, msg.Expected)
			}
			want := []string{"pub-3 on devices/3/t", "pub-7 on devices/7/t"}
			if got := silentNames(sp); !slices.Equal(got, want) || sp.Publishers != 2 || sp.Of != 10 || !sp.Confined ||
				sp.Copies != msg.Lost || sp.Copies < 2*result.SilentMinCopies || !slices.Equal(sp.Topics, []string{"devices/3/t", "devices/7/t"}) {
				t.Errorf("silent_publishers %+v (named %q); lost %d of %d expected", sp, got, msg.Lost, msg.Expected)
			}
			text := summary(t, res)
			line := fmt.Sprintf("all %d copies of 2 of 10 publishers (pub-3 on devices/3/t, pub-7 on devices/7/t), "+
				"their connections healthy: a broker ACL or a silent drop? (%s)", sp.Copies, result.LossConfinedRule)
			if !strings.Contains(text, "\nLOST ") || !strings.Contains(text, line) || strings.Contains(text, secret) {
				t.Errorf("summary, want the line\n%s\n%s", line, text)
			}
		})
	}
	t.Run("allowed", func(t *testing.T) {
		res := checkDoc(t, doOK(t, silentScenario("Point-To-Point", 1, 10, 10, "devices/$clientindex/t", open.Addr), PasswordEnv+"="+secret))
		if sp := res.Messages.Silent; sp == nil || sp.Publishers != 0 || sp.Confined || sp.Of != 10 || res.Messages.Lost != 0 {
			t.Errorf("silent_publishers %+v, lost %d", sp, res.Messages.Lost)
		}
		if text := summary(t, res); strings.Contains(text, "LOST") {
			t.Errorf("summary of a run without loss:\n%s", text)
		}
	})
}

// TestSilentPublishersAcrossProcesses: QoS 1 runs against a scripted broker that
// acknowledges everything and delivers none of publisher 1's messages, a P2P of 6 pairs and
// a fan-in of 7 publishers to 6 subscribers: in one process, three workers, and three
// merged shards of one and of two processes, the result names jp-1 as the one silent
// publisher, its copies the run's lost ones. Before the parts' joins carried the
// publishers that may be silent, the workers' and shards' fan-in said it could not judge one.
// The same run with a quarter of every publisher's copies dropped at random has loss but no
// silent publisher, and no LOST line.
func TestSilentPublishersAcrossProcesses(t *testing.T) {
	t.Parallel() // its own broker and runs: it waits on them, beside the other such tests
	br := testbroker.StartRouter(t, func(uint32, uint32) bool { return true },
		func(_ string, subs []string, pub, _ uint32) []string {
			if pub == 1 {
				return nil
			}
			return subs
		})
	runs := joinRuns(t, func() *Spec {
		return joinScenario("Point-To-Point", 6, "join/p2p/$clientindex", "join/p2p/$clientindex", br.Addr)
	})
	for name, res := range runs {
		m := res.Messages
		sp := m.Silent
		if sp == nil {
			t.Errorf("%s: no silent_publishers: lost %d of %d", name, m.Lost, m.Expected)
			continue
		}
		if got := silentNames(sp); !slices.Equal(got, []string{"jp-1 on join/p2p/1"}) || sp.Publishers != 1 || sp.Of != 6 ||
			sp.NotJudged != 0 || !sp.Confined || sp.Copies != m.Lost || m.Lost < result.SilentMinCopies {
			t.Errorf("%s: silent_publishers %+v (named %q); lost %d of %d", name, sp, got, m.Lost, m.Expected)
		}
		if text := summary(t, res); !strings.Contains(text, fmt.Sprintf("all %d copies of 1 of 6 publishers (jp-1 on join/p2p/1)", m.Lost)) {
			t.Errorf("%s: summary:\n%s", name, text)
		}
	}

	// A fan-in of 7 publishers (every subscriber receives every publisher): no part of a
	// run with parts can tell alone whether jp-1's copies arrived in another; the merge can.
	fanin := joinRuns(t, func() *Spec {
		return joinScenario("Fan-In", 7, "join/fanin/$clientindex", "join/fanin/#", br.Addr)
	})
	for name, res := range fanin {
		m := res.Messages
		if s := m.Silent; s == nil || !slices.Equal(silentNames(s), []string{"jp-1 on join/fanin/1"}) || s.Publishers != 1 || s.Of != 7 ||
			s.NotJudged != 0 || !s.Confined || s.Copies != m.Lost || m.Lost < result.SilentMinCopies || res.Join != nil {
			t.Errorf("fan-in, %s: silent_publishers %+v; lost %d of %d; join left %+v", name, s, m.Lost, m.Expected, res.Join)
		}
	}

	random := testbroker.StartRouter(t, func(uint32, uint32) bool { return true },
		func(_ string, subs []string, pub, seq uint32) []string {
			if (seq*7+pub*3)%4 == 0 {
				return nil
			}
			return subs
		})
	res := doOK(t, joinScenario("Point-To-Point", 6, "join/p2p/$clientindex", "join/p2p/$clientindex", random.Addr)).res
	m := res.Messages
	if sp := m.Silent; m.Lost < 6*result.SilentMinCopies || sp == nil || sp.Publishers != 0 || sp.Confined || sp.Of != 6 {
		t.Errorf("random loss: silent_publishers %+v, lost %d of %d", sp, m.Lost, m.Expected)
	}
	if text := summary(t, res); strings.Contains(text, "LOST") {
		t.Errorf("random loss: summary:\n%s", text)
	}
}
