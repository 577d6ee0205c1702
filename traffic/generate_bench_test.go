package traffic

import (
	"net/netip"
	"testing"
	"time"
)

// BenchmarkPageLoad is the cost per request of a generator of many actors: the
// spawners' queue picks the next user, and each page load's requests wait in the request
// queue for their time.
func BenchmarkPageLoad(b *testing.B) {
	b.ReportAllocs()
	p := PageLoad{
		Users: 5000, Fanout: 8, Spread: 50 * time.Millisecond, Interactions: 2, InteractionSize: 3,
		InteractionGap: 500 * time.Millisecond, Think: 5 * time.Second,
		Addrs: AddrPool(netip.MustParseAddr("198.18.0.1"), 5000, 32), UserPrefix: "user-", End: 1 << 62,
	}
	src := NewPageLoad(p, testRNG())
	var r Request
	for b.Loop() {
		if !src.Next(&r) {
			b.Fatal("the generator ran dry")
		}
	}
}
