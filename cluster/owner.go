package cluster

import (
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/store"
)

// The owner placement: no store; each key has one owner node on a consistent-hash ring,
// and the others forward to it (owners, below).
func init() {
	registerPlacement(PlacementKind{
		Name:     "owner",
		Doc:      "no store: each key has one owner node on a consistent-hash ring, the others forward to it",
		Rank:     70,
		Store:    func(*Config) bool { return false },
		Validate: checkRing,
		New: func(f *Fleet, _ store.Store) (placement, error) {
			return newOwners(f.cfg, f.algorithm, f.policy), nil
		},
		Owners: func(*Config) bool { return true },
	})
}

// Forwards are the ways a node sends a request for a key another node owns (placement
// owner).
//
//	direct   one peer request per forwarded request (Gubernator's NO_BATCHING)
//	batched  the forwarded requests from one node to one owner that arrive within
//	         BatchWait of the first share one peer request, up to BatchLimit of them
//	         (Gubernator's BATCHING, its default behaviour)
var Forwards = []string{"direct", "batched"}

// DefaultBatchWait and DefaultBatchLimit are the batching window and size when
// Config.BatchWait and Config.BatchLimit are zero: Gubernator's defaults (BatchWait
// 500µs, BatchLimit 1000; config.go).
const (
	DefaultBatchWait  = 500 * time.Microsecond
	DefaultBatchLimit = 1000
)

// owners is the owner placement, the design of Gubernator (docs/architecture.md): no
// shared store; a consistent-hash ring (ring.go) gives every key one owner among the nodes
// in service, and the owner holds the key's whole count in its own memory, deciding with
// the scenario's algorithm under the full policy. A node that receives a request for a
// key it owns decides at once; any other node forwards it to the owner — one peer hop,
// PeerLatency of round trip — and relays the owner's answer.
//
// Batched forwarding: a forward from node a to owner b joins the open batch from a to b,
// or opens one; a batch leaves BatchWait after it opened and holds at most BatchLimit
// requests (the next opens another), and the owner decides its requests in order when it
// arrives, half a round trip later (by its own clock). Each request in it waits for the batch to leave
// and for the round trip: fewer peer requests, more added latency.
//
// Membership. When the node count changes the ring changes with it, and every key whose
// arc moved has a new owner, which starts with no count for it: the key's window begins
// afresh — the cache loss Gubernator accepts ("a small subset of traffic to over request
// for a short period"). Nodes taken out of service lose what they held; a node put back
// in service starts empty. A node that owned a key before, lost it and owns it again
// decides from what it still holds.
//
// Partitions (Outage.Nodes): a node cut off from its peers cannot forward, and no one can
// forward to it; such a request waits the client's timeout (StoreTimeout) and the outage
// policy decides. A cut-off node still decides the keys it owns, with what only it sees.
type owners struct {
	ring     *ring
	limiters []algorithms.Limiter // per node; nil while out of service
	policy   algorithms.Policy
	alg      string
	batched  bool
	wait     int64 // ns
	limit    int
	open     map[[2]int]*batch // the open batch from node a to owner b
	owner    []int             // per key: its owner after the last membership change (-1: not yet placed)

	forwarded int64 // decisions forwarded to another node
	messages  int64 // peer requests sent
	moves     int64 // keys whose owner changed at a membership change
	changes   int   // membership changes
}

type batch struct {
	leaves int64 // ns: when the batch is sent
	n      int
}

func newOwners(c Config, algorithm string, p algorithms.Policy) *owners {
	o := &owners{ring: newRing(c.VNodes), policy: p, alg: algorithm, batched: c.Forward == "batched",
		wait: int64(c.BatchWait), limit: c.BatchLimit, open: map[[2]int]*batch{}}
	return o
}

// serve puts nodes 0..n-1 in service: the nodes that leave lose their counts, the nodes
// that join start empty, and the ring moves the keys already placed (names, by key).
func (o *owners) serve(n int, names []string) {
	for i := n; i < len(o.limiters); i++ {
		o.limiters[i] = nil
	}
	for len(o.limiters) < n {
		o.limiters = append(o.limiters, nil)
	}
	for i := range n {
		if o.limiters[i] == nil {
			o.limiters[i], _ = algorithms.New(o.alg, o.policy)
		}
	}
	first := o.ring.nodes == 0
	o.ring.resize(n)
	clear(o.open)
	if first {
		return
	}
	o.changes++
	for k, name := range names {
		if k < len(o.owner) && o.owner[k] >= 0 {
			if now := o.ring.owner(name); now != o.owner[k] {
				o.owner[k] = now
				o.moves++
			}
		}
	}
}

// place records key's owner the first time it is seen, so a later membership change can
// tell whether it moved.
func (o *owners) place(key uint32, owner int) {
	for int(key) >= len(o.owner) {
		o.owner = append(o.owner, -1)
	}
	if o.owner[key] < 0 {
		o.owner[key] = owner
	}
}

// decide takes t's decision under the owner placement (see owners).
func (o *owners) decide(f *Fleet, t *ticket, _ *Outage) {
	name := f.names[t.key]
	b := o.ring.owner(name)
	o.place(t.key, b)
	if b == t.node {
		t.d = o.limiters[b].Allow(t.key, t.nodeNow, t.cost)
		return
	}
	elapsed := time.Duration(t.now - f.cfg.Epoch)
	_, cut := f.outageFor(t.node, elapsed, CutPeers)
	if cut == nil {
		_, cut = f.outageFor(b, elapsed, CutPeers)
	}
	if cut != nil {
		// The peer request cannot be made: the client waits out its timeout.
		t.inOutage = true
		t.wait = f.cfg.StoreTimeout
		t.d = f.failover(cut, t.nd, t.key, t.nodeNow, t.cost, false)
		return
	}
	o.forwarded++
	leaves := t.now
	if o.batched {
		pair := [2]int{t.node, b}
		bt := o.open[pair]
		if bt == nil || t.now >= bt.leaves || bt.n >= o.limit {
			bt = &batch{leaves: t.now + o.wait}
			o.open[pair] = bt
			o.messages++
		}
		bt.n++
		leaves = bt.leaves
	} else {
		o.messages++
	}
	rtt := int64(f.cfg.PeerLatency)
	at := leaves + rtt/2 + f.nodes[b].skew
	// The owner's answer counts from its own now; the client hears it a wait later.
	t.d = o.limiters[b].Allow(t.key, at, t.cost)
	t.peer = time.Duration(leaves - t.now + rtt)
}

var (
	_ resizer = (*owners)(nil)
	_ figurer = (*owners)(nil)
)

func (o *owners) resize(f *Fleet, _, to int) { o.serve(to, f.names) }

func (o *owners) figures(f *Fleet, d *DesignFigures) {
	d.OwnershipMoves, d.MembershipChanges = o.moves, o.changes
	if f.decided > 0 {
		d.PeerHops = float64(o.forwarded) / float64(f.decided)
		d.PeerMessages = float64(o.messages) / float64(f.decided)
	}
	d.Forward = f.cfg.Forward
}
