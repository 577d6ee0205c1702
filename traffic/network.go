package traffic

import (
	"net/netip"
	"strings"
)

// ProxyBase is the address of the first trusted proxy; proxy i (from 1) is ProxyBase+i−1.
var ProxyBase = netip.MustParseAddr("10.0.0.1")

// Network is the path from clients to the server: Proxies trusted reverse proxies in a
// row (a CDN, then a load balancer, ...). Each proxy appends the address it received the
// request from to X-Forwarded-For, so the server receives XFFSent, the client, then every
// proxy but the last, and sees the last proxy as its peer.
type Network struct {
	proxies  []netip.Addr
	appended string // ", p1, …, p(K−1)" after the client
	cache    map[netip.Addr]string
}

// NewNetwork returns a path through k trusted proxies (k = 0: clients connect directly).
func NewNetwork(k int) *Network {
	n := &Network{proxies: AddrPool(ProxyBase, k, 32), cache: map[netip.Addr]string{}}
	var b strings.Builder
	for i := 0; i+1 < k; i++ {
		b.WriteString(", ")
		b.WriteString(n.proxies[i].String())
	}
	n.appended = b.String()
	return n
}

// cacheLimit bounds the per-client header cache, so that an attacker with fresh IPv6
// addresses costs one string per request rather than unbounded memory.
const cacheLimit = 1 << 16

// Deliver fills r.Peer and r.XFF from r.ClientIP and r.XFFSent. A request without a
// client address (a scripted line) is left as it is.
func (n *Network) Deliver(r *Request) {
	if !r.ClientIP.IsValid() {
		return
	}
	if len(n.proxies) == 0 {
		r.Peer = r.ClientIP
		r.XFF = r.XFFSent
		return
	}
	r.Peer = n.proxies[len(n.proxies)-1]
	chain, ok := n.cache[r.ClientIP]
	if !ok {
		chain = r.ClientIP.String() + n.appended
		if len(n.cache) < cacheLimit {
			n.cache[r.ClientIP] = chain
		}
	}
	if r.XFFSent == "" {
		r.XFF = chain
	} else {
		r.XFF = r.XFFSent + ", " + chain
	}
}
