package run

import (
	"context"
	"fmt"
	"net"
	"os"

	"github.com/mqblast/mqblast/internal/child"
	"github.com/mqblast/mqblast/internal/secret"
	"github.com/mqblast/mqblast/network"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/run/spec"
	"github.com/mqblast/mqblast/scenario"
	"github.com/mqblast/mqblast/tuning"
)

// net runs the Spec's run under its network profile, s its scenario. With brokers and a
// kernel that has sch_netem, it applies netem toward each broker address, runs with the
// profile for the result, and clears it again (also after Ctrl-C). Otherwise it starts the
// packet emulator and a broker in its broker namespace (net.broker_cmd, or Mosquitto), runs
// the Spec in its client namespace against that broker, in a child process that writes the
// outputs, and removes the namespaces: that run's exit status is the error (ExitStatus), and
// the result is nil.
func (d *doer) net(ctx context.Context, s *scenario.Scenario) (*result.Result, error) {
	n, w := d.sp.Net, d.io.Stderr
	p, err := tuning.ParseProfile(n.Profile)
	if err != nil {
		return nil, usage(spec.Errorf("net.profile", "{net.profile}: %v", err))
	}
	brokers := d.sp.Brokers
	if len(brokers) > 0 && n.BrokerCmd == "" {
		if os.Geteuid() != 0 {
			return nil, usage(spec.Errorf("net", "{net} changes the host's qdiscs (tc netem) and needs root"))
		}
		if err := tuning.NetemAvailable(); err != nil {
			return nil, usage(spec.Errorf("net", "{net} with {brokers} needs sch_netem, which this host lacks (%v); "+
				"without {brokers} (or with {net.broker_cmd}), {net} runs the broker behind the packet emulator", err))
		}
		clear, err := network.Netem(w, p, brokers)
		if err != nil {
			return nil, err
		}
		defer clear()
		return d.run(ctx, s, &result.NetworkInfo{Profile: p.String(), Up: result.Path(p.Up), Down: result.Path(p.Down), Via: "netem"})
	}
	port := network.BrokerPort
	for _, b := range brokers {
		host, bport, err := net.SplitHostPort(b)
		if err != nil || host != network.BrokerHost().String() {
			return nil, usage(spec.Errorf("brokers", "{brokers} %q with {net.broker_cmd}: the broker listens in the emulator's broker namespace, "+
				"so give %s:PORT or no {brokers}", b, network.BrokerHost()))
		}
		port = bport
	}
	exe, err := child.Exe(d.io.Exe)
	if err != nil {
		return nil, fmt.Errorf("cannot find the mqblast binary to run in the client namespace: %w", err)
	}
	em, err := network.StartEmulator(ctx, w, p, exe, n.BrokerCmd, port)
	if err != nil {
		return nil, err
	}
	defer em.Close() //nolint:errcheck // closed below, and again on a failure
	env := &envelope{Spec: *d.inner(), Emulated: &emulated{Profile: p.String()}}
	if len(brokers) == 0 {
		env.Emulated.Broker = em.Broker()
	}
	f, err := env.file()
	if err != nil {
		return nil, err
	}
	defer f.Close() //nolint:errcheck
	var penv []string
	pw, groups := d.password()
	if pw != "" { // through the environment, never the argv or the envelope
		penv = append(penv, PasswordEnv+"="+pw)
	}
	penv = secret.EnvGroups(penv, groups)
	err = em.Run(ctx, []string{exe, ChildVerb}, penv, []*os.File{f}, network.Stdio{In: d.io.Stdin, Out: d.io.Stdout, Err: d.io.Stderr})
	if cerr := em.Close(); cerr != nil && err == nil {
		err = cerr
	}
	return nil, err
}
