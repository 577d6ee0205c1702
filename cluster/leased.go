package cluster

import (
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/store"
)

// The leased placement: a node borrows Config.Lease tokens at a time from a central
// token bucket on the store (one round trip) and spends them locally; unspent tokens
// lapse after Config.LeaseTTL. Whatever the algorithm asked, the bucket decides: the
// fleet's rows name its mechanism, store.Lease.
func init() {
	registerPlacement(PlacementKind{
		Name:      "leased",
		Doc:       "a node borrows Lease tokens at a time from a central bucket and spends them locally; unspent tokens lapse after LeaseTTL",
		Rank:      40,
		Mechanism: store.Lease,
		Runs:      func(*Config, []string) []string { return []string{algorithms.TokenBucketName} },
		New: func(f *Fleet, st store.Store) (placement, error) {
			lim, err := store.NewLimiter(st, store.Lease, f.policy, f.cfg.Prefix)
			return &leased{lim: lim}, err
		},
		Scripts: true,
	})
}

// leased holds the central bucket's script; each node's leases are in node.leases.
type leased struct{ lim *store.Limiter }

var (
	_ clocked    = (*leased)(nil)
	_ outstander = (*leased)(nil)
)

type lease struct {
	tokens  int64
	expires int64 // ns
	// askAfter is when the node may ask the central bucket again after it came back
	// short: the time the bucket takes to refill one lease. Until then the node refuses
	// on its own, so a client over its limit does not cost a round trip per request.
	askAfter int64
	// full is when the central bucket is full again, as its last reply to this node said
	// (ns, on the node's clock).
	full int64
}

func (p *leased) decide(f *Fleet, t *ticket, outage *Outage) {
	t.d, t.trips = p.spendLease(f, t, outage)
}

func (p *leased) setClock(clock store.Clock, keep time.Duration) {
	p.lim.SetClock(clock)
	p.lim.SetKeep(keep)
}

// spendLease spends a leased token for t's key on its node, borrowing Lease more from the
// central bucket (one round trip) when the node holds too few. A refusal's RetryAfter is
// when the node will ask the central bucket again (which may still be short then); Reset
// is when, as of the node's last ask, the bucket is full and the node holds no lease.
func (p *leased) spendLease(f *Fleet, t *ticket, outage *Outage) (d algorithms.Decision, trips int) {
	nd, key, at, cost := t.nd, t.key, t.at(), t.cost
	nodeNow := at.Node
	for int(key) >= len(nd.leases) {
		nd.leases = append(nd.leases, lease{})
	}
	l := &nd.leases[key]
	if l.tokens > 0 && nodeNow >= l.expires {
		l.tokens = 0
	}
	if l.tokens < cost && nodeNow >= l.askAfter {
		if o := f.reach(t, outage); o != nil {
			return f.failover(o, nd, key, nodeNow, cost, false), 0
		}
		want := max(f.cfg.Lease, cost)
		granted, full, err := p.lim.Lease(f.names[key], at, want)
		if f.oomRefused(t, err) {
			return t.d, 1
		}
		f.fail(err)
		if err != nil {
			return f.blind(), 1
		}
		trips = 1
		l.full = nodeNow + int64(full)
		if granted > 0 {
			l.tokens += granted
			l.expires = nodeNow + int64(f.cfg.LeaseTTL)
		}
		if granted < want {
			l.askAfter = nodeNow + want*int64(f.policy.Window)/f.policy.Limit
		}
	}
	idle := l.full
	if l.tokens > 0 {
		idle = max(idle, l.expires)
	}
	d.Reset = time.Duration(max(idle-nodeNow, 0))
	if l.tokens < cost {
		d.RetryAfter = time.Duration(l.askAfter - nodeNow)
		return d, trips
	}
	l.tokens -= cost
	d.Allowed, d.Remaining = true, l.tokens
	return d, trips
}

// outstanding is the leased, unspent, unexpired tokens all nodes hold for key at now.
func (*leased) outstanding(f *Fleet, key uint32, now int64) int64 {
	var sum int64
	for _, nd := range f.nodes {
		if int(key) < len(nd.leases) {
			if l := nd.leases[key]; l.tokens > 0 && now+nd.skew < l.expires {
				sum += l.tokens
			}
		}
	}
	return sum
}
