package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mqblast/mqblast/tuning"
)

func newAddrsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "addrs",
		Short:   "Add or remove source addresses on an interface",
		Long:    helpText("addrs"),
		Example: examples("addrs"),
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newAddrsOpCmd("add"), newAddrsOpCmd("del"))
	return cmd
}

func newAddrsOpCmd(op string) *cobra.Command {
	var (
		dev, cidr, netns string
		count            int
		dryRun           bool
	)
	verb := map[string]string{"add": "Add", "del": "Remove"}[op]
	cmd := &cobra.Command{
		Use:   op + " --dev DEV --cidr A.B.C.D/N --count K",
		Short: verb + " K consecutive addresses of a CIDR on an interface",
		Long: verb + ` K consecutive addresses of --cidr, each with the CIDR's prefix length, on --dev. They
start at the CIDR's address, or at the first one after the network address when the CIDR names
the network (10.0.0.0/24 starts at 10.0.0.1); an IPv4 broadcast address is never used. Removal
goes in reverse order, so that deleting the primary address does not take the others with it.`,
		Example: fmt.Sprintf(`  mqblast addrs %[1]s --dev eth0 --cidr 10.0.0.0/16 --count 20
  mqblast addrs %[1]s --dev eth0 --cidr 192.168.7.10/24 --count 5 --dry-run`, op),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dev == "" || cidr == "" {
				return usageError(fmt.Errorf("addrs %s needs --dev and --cidr", op))
			}
			addrs, err := tuning.HostAddrs(cidr, count)
			if err != nil {
				return usageError(err)
			}
			script, err := tuning.AddrBatch(op, dev, addrs)
			if err != nil {
				return usageError(err)
			}
			return tuning.RunAddrBatch(cmd.Context(), cmd.OutOrStdout(), op, dev, netns, addrs, script, dryRun)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&dev, "dev", "", "network interface (required)")
	fl.StringVar(&cidr, "cidr", "", "addresses to take, as A.B.C.D/N or an IPv6 prefix (required)")
	fl.IntVar(&count, "count", 1, "number of addresses")
	fl.BoolVar(&dryRun, "dry-run", false, "print the ip commands without running them")
	fl.StringVar(&netns, "netns", "", "network namespace to work in (ip -n NETNS)")
	return cmd
}
