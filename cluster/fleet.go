package cluster

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/store"
)

// Fleet decides requests as a fleet of nodes would. It implements algorithms.Limiter so
// a scenario runs it like any single limiter; it must be told each key's client name
// (SetName) before the key's first decision, for hash routing and store key names. It
// decides and does not measure: Observe hands each decision's facts to whoever does
// (report.FleetMeter), and Finish returns what the fleet knows of its own run. It is not
// safe for concurrent use.
//
// Its decisions keep the Limiter contract with what the deciding node can know: the
// local limiter's decision; the shared script's reply (RetryAfter and Reset in whole µs);
// for a leased node, when it will ask the central bucket again and when the bucket is
// full as of its last ask; for INCR-then-EXPIRE, the counter's window end (one window
// when the window is the key's TTL, which the node never reads back); for the racy
// placement, the script's arithmetic on what the node read; and when the store cannot be
// reached and the node refuses, the longest recovery from empty (see blind).
type Fleet struct {
	cfg       Config
	algorithm string
	policy    algorithms.Policy
	rng       *rand.Rand
	st        store.Store

	nodes     []*node // every node ever started; the first active are in service
	active    int
	nodeShare algorithms.Policy // the per-node policy of local placement
	guard     algorithms.Policy
	scaleNext int
	rr        int

	kind     *PlacementKind // the placement, as registered (placement.go)
	place    placement      // its state in this fleet, in the placement's own file
	script   *store.Limiter // the algorithm's shared script, for the placements that ask it
	breakers []breaker      // per node, with Config.Breaker (breaker.go)
	designs                 // failovers, eviction, the shadow (designs.go)

	names   []string
	label   string
	observe func(*Observation)
	seen    Observation // the one Observe hands out, reused

	alerted  int // outages alerted so far (index+1 of the last)
	alerts   int
	alert    string
	nodesMax int
	err      error

	batches // decisions held and batches sent (pipeline.go)
}

var _ algorithms.Limiter = (*Fleet)(nil)

type node struct {
	skew   int64
	local  algorithms.Limiter // its share of the limit, deciding alone (local.go)
	guard  algorithms.Limiter // the node-local guard (two-tier, fail-open-local)
	leases []lease            // per key (leased.go)
}

// New builds a fleet deciding with algorithm under policy p, c's zero fields taking
// their defaults (Config.WithDefaults). st is the shared store (ignored by the local
// placement); rng is the run's random source (random balancer, crashes).
func New(c Config, algorithm string, p algorithms.Policy, st store.Store, rng *rand.Rand) (*Fleet, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	c = c.WithDefaults(p)
	if c.Eviction != nil && c.UsesStore() && algorithms.FormOf(algorithm) == algorithms.FormTimestamps {
		return nil, fmt.Errorf("eviction: no memory model of %s's sorted set; run it with another algorithm", algorithm)
	}
	f := &Fleet{cfg: c, kind: PlacementOf(c.Placement), algorithm: algorithm, policy: p, rng: rng, nodesMax: c.Nodes}
	f.nodeShare = share(p, c.Nodes)
	f.guard = c.Guard
	if _, err := algorithms.New(algorithm, f.nodeShare); err != nil {
		return nil, err
	}
	var err error
	if f.st, err = f.newDesigns(st); err != nil {
		return nil, err
	}
	if f.place, err = f.kind.New(f, f.st); err != nil {
		return nil, err
	}
	if err := f.newShadow(); err != nil {
		return nil, err
	}
	f.setClocks()
	f.resize(c.Nodes)
	return f, nil
}

// share is the per-node policy when n nodes split p.
func share(p algorithms.Policy, n int) algorithms.Policy {
	s := algorithms.Policy{Limit: max(p.Limit/int64(n), 1), Window: p.Window}
	if p.Burst > 0 {
		s.Burst = max(p.Burst/int64(n), 1)
	}
	return s
}

// resize puts n nodes in service, starting new ones as needed.
func (f *Fleet) resize(n int) {
	for len(f.nodes) < n {
		nd := &node{skew: skewOf(len(f.nodes), f.cfg.Skew)}
		nd.local, _ = algorithms.New(f.algorithm, f.nodeShare)
		nd.guard, _ = algorithms.New(f.algorithm, f.guard)
		f.nodes = append(f.nodes, nd)
	}
	if r, ok := f.place.(resizer); ok {
		r.resize(f, f.active, n)
	}
	f.active = n
	f.nodesMax = max(f.nodesMax, n)
}

// skewOf is node i's clock offset: fixed for the node's life (its clock never jumps),
// spread over [−Skew, +Skew] by the golden-ratio sequence so any n nodes cover the range.
func skewOf(i int, skew time.Duration) int64 {
	if skew == 0 {
		return 0
	}
	frac := math.Mod(float64(i)*0.6180339887498949, 1)
	return int64(float64(skew) * (2*frac - 1))
}

// SetName tells the fleet key's client name; call it before key's first decision.
func (f *Fleet) SetName(key uint32, name string) {
	for int(key) >= len(f.names) {
		f.names = append(f.names, "")
	}
	f.names[key] = name
}

// SetLabel makes Name return "<algorithm>@<label>", so rows of several fleet variants in
// one decisions file can be told apart; Algorithm keeps the bare name.
func (f *Fleet) SetLabel(label string) { f.label = label }

// Name is Algorithm, followed by "@" and the label when one is set.
func (f *Fleet) Name() string {
	if f.label != "" {
		return f.Algorithm() + "@" + f.label
	}
	return f.Algorithm()
}

// Algorithm is the algorithm, or the mechanism the placement imposes
// (PlacementKind.Mechanism).
func (f *Fleet) Algorithm() string {
	if f.kind.Mechanism != "" {
		return f.kind.Mechanism
	}
	return f.algorithm
}

// Config is the fleet's configuration, defaults applied.
func (f *Fleet) Config() Config { return f.cfg }

// Keys is the number of client keys seen.
func (f *Fleet) Keys() int { return len(f.names) }

// StateBytes is the in-process state the nodes hold (local counters and guards).
func (f *Fleet) StateBytes() int64 {
	var b int64
	for _, nd := range f.nodes {
		b += nd.local.StateBytes() + nd.guard.StateBytes()
	}
	return b
}

// Err is the first store error the run met (a store that failed outside a scripted
// outage); decisions after it are refused.
func (f *Fleet) Err() error { return f.err }

// route picks the node for key.
func (f *Fleet) route(key uint32) int {
	switch f.cfg.Balancer {
	case "random":
		return f.rng.IntN(f.active)
	case "hash":
		h := fnv.New32a()
		h.Write([]byte(f.names[key]))
		return int(h.Sum32() % uint32(f.active))
	}
	i := f.rr % f.active
	f.rr++
	return i
}

// outageAt returns the store outage covering elapsed, if any (partitions, which leave
// the store up, aside: see outageFor).
func (f *Fleet) outageAt(elapsed time.Duration) (int, *Outage) {
	for i := range f.cfg.Outages {
		o := &f.cfg.Outages[i]
		if elapsed >= o.At && elapsed < o.At+o.For && o.Nodes == 0 {
			return i, o
		}
	}
	return -1, nil
}

// Allow decides a request for key at now (ns since the Unix epoch, virtual).
func (f *Fleet) Allow(key uint32, now int64, cost int64) algorithms.Decision {
	var t ticket
	f.begin(&t, key, now, cost)
	if t.ask {
		r, err := f.script.Allow(f.names[key], t.at(), t.cost)
		t.d = f.storeReply(&t, r, err)
	}
	return f.end(t)
}

// ticket is a decision between its two halves: begin takes every step that comes before
// the shared script's reply (scaling, routing, outages, the guard), end every step after.
type ticket struct {
	key                uint32
	node               int // nd's index
	nd                 *node
	now, nodeNow, cost int64
	inOutage           bool
	trips              int
	wait               time.Duration // the store client's timeout, when a call waited it out
	peer               time.Duration // what a forward to another node took (owner.go)
	breakerOpen        bool          // an open breaker decided without calling the store
	crashed            bool          // the process died between INCR and EXPIRE
	d                  algorithms.Decision
	// ask says the shared script decides: d comes from its reply.
	ask bool
	// counted says Kong's counters in the store decided d (shared.go).
	counted bool
}

// begin takes the steps of a decision up to the shared script into t, and leaves the
// script to the caller when t.ask is set; the other placements' store calls are made
// here. t is the caller's (in a batch, the held decision's own): a ticket made here would
// go to the heap, one a decision, since the placement's decide takes its address.
func (f *Fleet) begin(t *ticket, key uint32, now int64, cost int64) {
	cost = max(cost, 1)
	if int(key) >= len(f.names) {
		f.SetName(key, fmt.Sprintf("key-%d", key))
	}
	elapsed := time.Duration(now - f.cfg.Epoch)
	for f.scaleNext < len(f.cfg.Scale) && f.cfg.Scale[f.scaleNext].At <= elapsed {
		f.resize(f.cfg.Scale[f.scaleNext].Nodes)
		f.scaleNext++
	}
	ni := f.route(key)
	nd := f.nodes[ni]
	nodeNow := now + nd.skew
	oi, outage := f.outageFor(ni, elapsed, f.ownLink())
	if outage != nil && !f.kind.Isolated && f.alerted <= oi {
		f.raise(oi, outage)
	}
	*t = ticket{key: key, node: ni, nd: nd, now: now, nodeNow: nodeNow, cost: cost, inOutage: outage != nil && f.cfg.UsesStore()}

	if f.err != nil {
		// The store failed outside a scripted outage: the run is over, and every later
		// call would wait out its own timeout. Refuse without asking.
		t.d = f.blind()
		return
	}
	f.place.decide(f, t, outage)
}

// fromStore is the decision a store reply carries, or, when the store failed, a refusal
// that knows nothing (blind); the first failure ends the run (see Err).
func (f *Fleet) fromStore(r store.Reply, err error) algorithms.Decision {
	f.fail(err)
	if err != nil {
		return f.blind()
	}
	return algorithms.Decision{Allowed: r.Allowed, Remaining: r.Remaining, RetryAfter: r.RetryAfter, Reset: r.Reset}
}

// blind is a refusal by a node that cannot reach the store, so cannot know when the
// client's quota returns: it names the longest any algorithm takes to recover from empty,
// one window or a bucket's refill of burst, whichever is longer.
func (f *Fleet) blind() algorithms.Decision {
	recovery := max(f.policy.Window, time.Duration(f.policy.EffectiveBurst())*f.policy.Window/time.Duration(f.policy.Limit))
	return algorithms.Decision{RetryAfter: recovery, Reset: recovery}
}

// end finishes a ticket, tells the observer, and returns the decision.
func (f *Fleet) end(t ticket) algorithms.Decision {
	if f.err != nil {
		t.d = f.blind()
	}
	f.designsEnd(&t)
	if f.observe != nil {
		o := &f.seen
		*o = Observation{
			Key: t.key, Node: t.node, Now: t.now, Cost: t.cost, Allowed: t.d.Allowed, InOutage: t.inOutage,
			RoundTrips: t.trips, Added: time.Duration(t.trips)*f.cfg.Latency + t.wait + t.peer,
			TimedOut: t.wait > 0, BreakerOpen: t.breakerOpen, Crashed: t.crashed,
		}
		if l, ok := f.place.(outstander); ok {
			o.LeasesOutstanding = l.outstanding(f, t.key, t.now)
		}
		f.observe(o)
	}
	return t.d
}

// failover decides during an outage by the outage's policy; guarded says the node-local
// guard has already admitted this request (two-tier). Failing open admits knowing nothing
// of the quota; failing closed refuses blind; the local guard decides as any limiter.
func (f *Fleet) failover(o *Outage, nd *node, key uint32, nodeNow, cost int64, guarded bool) algorithms.Decision {
	switch {
	case o.Policy == "fail-open" || o.Policy == "fail-open-local" && guarded:
		return algorithms.Decision{Allowed: true}
	case o.Policy == "fail-open-local":
		return nd.guard.Allow(key, nodeNow, cost)
	}
	return f.blind()
}

func (f *Fleet) raise(oi int, o *Outage) {
	f.alerted = oi + 1
	f.alerts++
	if f.alert != "" {
		return
	}
	what := map[string]string{
		"fail-open":       "nodes fail open: no limit is enforced",
		"fail-closed":     "nodes fail closed: every request is refused",
		"fail-open-local": fmt.Sprintf("nodes fall back to their local guard of %d per %s per key", f.guard.Limit, f.guard.Window),
	}[o.Policy]
	if o.Nodes > 0 {
		if l, ok := f.place.(loner); ok && l.alone() != "" {
			what = l.alone()
		}
		from := map[string]string{CutStore: " from the store", CutPeers: " from their peers"}[o.Cut]
		f.alert = fmt.Sprintf("nodes 0–%d cut off%s at %s for %s; they %s", o.Nodes-1, from, o.At, o.For, strings.TrimPrefix(what, "nodes "))
		return
	}
	f.alert = fmt.Sprintf("store unreachable at %s for %s; %s", o.At, o.For, what)
}

func (f *Fleet) fail(err error) {
	if err != nil && f.err == nil {
		f.err = err
	}
}

// Finish ends the run: the writes of the racy placement still in flight land, as they
// would, and the store is audited for keys left without a TTL. It returns what the fleet
// knows of its own run, and the first store error the run met (see Err).
func (f *Fleet) Finish() (Stats, error) {
	s := Stats{NodesMax: f.nodesMax, Alerts: f.alerts, Alert: f.alert}
	if f.cfg.UsesStore() {
		s.Store = f.st.Name()
	}
	if f.kind.Guarded || f.hasPolicy("fail-open-local") {
		s.GuardLimit = f.guard.Limit
	}
	for _, b := range f.breakers {
		s.BreakerOpens += b.opens
	}
	if fin, ok := f.place.(finisher); ok {
		fin.finish(f, &s)
	}
	if f.err != nil || !f.cfg.UsesStore() {
		return s, f.err
	}
	a, err := store.Audit(f.st, f.cfg.Prefix, f.policy.Limit, f.cfg.TTLWindowKey)
	if err != nil {
		return s, err
	}
	s.BlockedForever, s.LeakedKeys, s.LeakedBytes = a.Blocked, a.Leaked, a.LeakedBytes
	return s, nil
}

// at is the ticket's moment on the store's clock (the true time) and the node's.
func (t ticket) at() store.At { return store.At{Store: t.now, Node: t.nodeNow} }

// setClocks tells the store limiters which clock to decide by, and how long keys must
// outlive their data: the widest gap between two nodes' clocks, twice the skew.
func (f *Fleet) setClocks() {
	clock, keep := store.NodeClock, 2*f.cfg.Skew
	if f.cfg.Clock == "store" {
		clock = store.StoreClock
	}
	if f.script != nil {
		f.script.SetClock(clock)
		f.script.SetKeep(keep)
	}
	if c, ok := f.place.(clocked); ok {
		c.setClock(clock, keep)
	}
}

func (f *Fleet) hasPolicy(p string) bool {
	for _, o := range f.cfg.Outages {
		if o.Policy == p {
			return true
		}
	}
	return false
}
