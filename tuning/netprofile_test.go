package tuning

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseProfile(t *testing.T) {
	t.Parallel()
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	check := func(in string, want Profile, canon string) {
		t.Helper()
		got, err := ParseProfile(in)
		if err != nil {
			t.Fatalf("ParseProfile(%q): %v", in, err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("ParseProfile(%q) (-want +got):\n%s", in, d)
		}
		if got.String() != canon {
			t.Errorf("ParseProfile(%q).String() = %q, want %q", in, got.String(), canon)
		}
		again, err := ParseProfile(got.String())
		if err != nil || again.Up != got.Up || again.Down != got.Down {
			t.Errorf("ParseProfile(%q) does not read back: %+v, %v", got.String(), again, err)
		}
	}
	both := func(name string, d, j float64, loss float64) Profile {
		p := Path{Delay: ms(d), Jitter: ms(j), Loss: loss}
		return Profile{Name: name, Up: p, Down: p}
	}
	check("local", Profile{Name: "local"}, "local")
	check("optimal", both("optimal", 1.25, 0.25, 0.0002), "optimal")
	check("typical", both("typical", 2.08, 0.42, 0.0003), "typical")
	check("worst", both("worst", 3.125, 0.625, 0.0005), "worst")
	check("cloud", both("cloud", 12.5, 0, 0), "cloud")
	check("delay=2ms,jitter=0.4ms,loss=0.03%", both("", 2, 0.4, 0.0003), "delay=2ms,jitter=400us,loss=0.03%")
	check(" delay=2ms , loss=1% ", both("", 2, 0, 0.01), "delay=2ms,loss=1%")
	check("worst,up:loss=1%", Profile{Up: Path{ms(3.125), ms(0.625), 0.01}, Down: Path{ms(3.125), ms(0.625), 0.0005}},
		"delay=3.125ms,jitter=625us,up:loss=1%,down:loss=0.05%")
	check("worst,up:loss=0%", Profile{Up: Path{ms(3.125), ms(0.625), 0}, Down: Path{ms(3.125), ms(0.625), 0.0005}},
		"delay=3.125ms,jitter=625us,down:loss=0.05%")
	check("up:delay=5ms,down:delay=1ms", Profile{Up: Path{Delay: ms(5)}, Down: Path{Delay: ms(1)}}, "up:delay=5ms,down:delay=1ms")
	check("down:loss=100%", Profile{Down: Path{Loss: 1}}, "down:loss=100%")
	check("delay=0s", Profile{}, "local")
}

func TestParseProfileErrors(t *testing.T) {
	t.Parallel()
	check := func(in, want string) {
		t.Helper()
		_, err := ParseProfile(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseProfile(%q) = %v, want an error containing %q", in, err, want)
		}
	}
	check("", "network profile is empty")
	check("bestest", `unknown profile "bestest": want one of local, optimal, typical, worst, cloud`)
	check("delay=2", `"2" is not a duration: write it like 2ms`)
	check("delay=-1ms", "outside 0 to 10s")
	check("delay=11s", "outside 0 to 10s")
	check("loss=0.03", `loss "0.03" has no %: write a percentage such as 0.03%`)
	check("loss=x%", "is not a number")
	check("loss=101%", "outside 0% to 100%")
	check("loss=-1%", "outside 0% to 100%")
	check("delay=1ms,jitter=2ms", "up jitter 2ms is outside 0 to the delay 1ms")
	check("up:delay=1ms,jitter=1ms", "down jitter 1ms is outside 0 to the delay 0s")
	check("rate=1mbit", `unknown key "rate": want delay, jitter or loss`)
	check("delay=1ms,worst", "a named profile can only come first")
	check("left:delay=1ms", `unknown key "left:delay"`)
	check("local,delay", "want KEY=VALUE")
}

func TestPlanNetem(t *testing.T) {
	t.Parallel()
	p, err := ParseProfile("optimal,down:loss=0%")
	if err != nil {
		t.Fatal(err)
	}
	n, err := PlanNetem(p, "eth0", netip.MustParseAddr("192.0.2.7"))
	if err != nil {
		t.Fatal(err)
	}
	join := func(cmds [][]string) string {
		var b strings.Builder
		for _, c := range cmds {
			b.WriteString(strings.Join(c, " ") + "\n")
		}
		return b.String()
	}
	want := `tc qdisc replace dev eth0 root handle 1: prio bands 4
tc qdisc add dev eth0 parent 1:4 handle 40: netem limit 100000 delay 1250us 250us loss random 0.02%
tc filter add dev eth0 parent 1:0 protocol ip prio 1 u32 match ip dst 192.0.2.7/32 flowid 1:4
ip link add mqb-eth0 type ifb
ip link set mqb-eth0 up
tc qdisc replace dev eth0 handle ffff: ingress
tc filter add dev eth0 parent ffff: protocol ip prio 1 u32 match ip src 192.0.2.7/32 action mirred egress redirect dev mqb-eth0
tc qdisc replace dev mqb-eth0 root netem limit 100000 delay 1250us 250us
`
	if d := cmp.Diff(want, join(n.Apply)); d != "" {
		t.Errorf("apply (-want +got):\n%s", d)
	}
	wantClear := "tc qdisc del dev eth0 root\ntc qdisc del dev eth0 ingress\nip link del mqb-eth0\n"
	if d := cmp.Diff(wantClear, join(n.Clear)); d != "" {
		t.Errorf("clear (-want +got):\n%s", d)
	}

	up, _ := ParseProfile("up:delay=12.5ms")
	n, err = PlanNetem(up, "enp0s31f6-long1", netip.MustParseAddr("2001:db8::1"))
	if err != nil {
		t.Fatal(err)
	}
	want = `tc qdisc replace dev enp0s31f6-long1 root handle 1: prio bands 4
tc qdisc add dev enp0s31f6-long1 parent 1:4 handle 40: netem limit 100000 delay 12500us
tc filter add dev enp0s31f6-long1 parent 1:0 protocol ipv6 prio 1 u32 match ip6 dst 2001:db8::1/128 flowid 1:4
`
	if d := cmp.Diff(want, join(n.Apply)); d != "" {
		t.Errorf("apply v6 (-want +got):\n%s", d)
	}
	if n.IFB != "mqb-enp0s31f6-l" {
		t.Errorf("IFB = %q, want 15 bytes", n.IFB)
	}
	if _, err := PlanNetem(p, "eth0", netip.Addr{}); err == nil || !strings.Contains(err.Error(), "--to ADDR") {
		t.Errorf("no address: %v", err)
	}
	if _, err := PlanNetem(p, "a b", netip.MustParseAddr("192.0.2.7")); err == nil {
		t.Error("a bad device name was accepted")
	}
}
