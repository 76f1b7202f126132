package run

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/mqblast/mqblast/internal/termtext"
	"github.com/mqblast/mqblast/reactor"
	"github.com/mqblast/mqblast/run/spec"
	"github.com/mqblast/mqblast/scenario"
)

// resolveTimeout bounds the look-up of one broker's host name.
const resolveTimeout = 10 * time.Second

// resolveBrokers looks up the host name of every broker of plan before the run's first
// socket, as the engine will: a name that does not resolve is a usage error naming
// {brokers} when --broker gave the run's server (byFlag), and makes the scenario invalid
// when its file or --set did (file names it), or a group's own server.
func resolveBrokers(ctx context.Context, plan *scenario.Plan, byFlag bool, file string) error {
	seen := map[string]bool{}
	own := plan.OwnBrokers()
	for i, b := range slices.Concat(plan.Brokers(), own) {
		_, host, _, _, err := reactor.ParseBroker(b)
		if err != nil || seen[host] {
			continue // a bad address is the engine's to report
		}
		seen[host] = true
		if _, err := netip.ParseAddr(host); err == nil {
			continue
		}
		lctx, cancel := context.WithTimeout(ctx, resolveTimeout)
		_, err = net.DefaultResolver.LookupNetIP(lctx, "ip", host)
		cancel()
		if err == nil {
			continue
		}
		why := err.Error()
		var de *net.DNSError
		var ae *net.AddrError
		switch {
		case errors.As(err, &de) && de.IsNotFound:
			why = "no such host"
		case errors.As(err, &ae):
			why = ae.Err
		}
		const fix = "give a name this host resolves (DNS, /etc/hosts) or the broker's IP address"
		if byFlag && i < len(plan.Brokers()) {
			return usage(spec.Errorf("brokers", "{brokers} %s: cannot resolve the host name %q (%s): %s",
				termtext.Line(b), termtext.Line(host), termtext.Line(why), fix))
		}
		return kind(errInvalid, fmt.Errorf("%s: the broker %s: cannot resolve the host name %q (%s): %s",
			file, termtext.Line(b), termtext.Line(host), termtext.Line(why), fix))
	}
	return nil
}
