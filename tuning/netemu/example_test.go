package netemu_test

import (
	"context"
	"fmt"
	"net"

	"github.com/mqblast/mqblast/tuning"
	"github.com/mqblast/mqblast/tuning/netemu"
)

// A study puts a broker behind the emulator once and changes the profile per cell.
func ExampleStart() {
	link, err := netemu.Start(netemu.Config{}) // the zero profile: local
	if err != nil {
		fmt.Println(err) // not root, no ip(8), not Linux
		return
	}
	defer link.Close()
	ctx := context.Background()
	broker := link.BrokerCommand(ctx, "mosquitto", "-c", "/etc/mosquitto/bench.conf") // listens on 10.211.0.1:1883
	if err := broker.Start(); err != nil {
		fmt.Println(err)
		return
	}
	addr := net.JoinHostPort(link.BrokerAddr().String(), "1883")
	for _, name := range []string{"local", "optimal", "worst"} {
		p, _ := tuning.ParseProfile(name)
		if err := link.SetProfile(p); err != nil {
			fmt.Println(err)
			return
		}
		before := link.Stats()
		client := link.ClientCommand(ctx, "mqblast", "run", "quick-p2p-100", "--broker", addr, "--out", name+".json")
		if err := client.Run(); err != nil {
			fmt.Println(err)
		}
		after := link.Stats()
		fmt.Printf("%s: %d frames lost by the profile, emulator CPU %v\n", p, after.Up.Lost+after.Down.Lost-before.Up.Lost-before.Down.Lost, after.CPU-before.CPU)
	}
	_ = broker.Process.Kill() // Close would kill it too
	_ = broker.Wait()
}
