package traffic_test

import (
	"fmt"
	"net/netip"

	"github.com/rlsim/rlsim/traffic"
)

// Behind two trusted proxies, a client that forges X-Forwarded-For is found by counting
// proxies from the right; trusting the leftmost entry keys the forgery.
func ExampleKeyer_Key() {
	r := traffic.Request{ClientIP: netip.MustParseAddr("192.0.2.66"), XFFSent: "203.0.113.99"}
	traffic.NewNetwork(2).Deliver(&r)
	fmt.Println("X-Forwarded-For:", r.XFF)
	fmt.Println("peer:", r.Peer)
	for _, spec := range []string{"ip", "xff:2", "xff-leftmost"} {
		k, _ := traffic.ParseKeyer(spec)
		key, _ := k.Key(&r)
		fmt.Printf("%-12s → %s\n", spec, key)
	}
	// Output:
	// X-Forwarded-For: 203.0.113.99, 192.0.2.66, 10.0.0.1
	// peer: 10.0.0.2
	// ip           → 10.0.0.2
	// xff:2        → 192.0.2.66
	// xff-leftmost → 203.0.113.99
}
