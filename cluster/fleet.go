package cluster

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/store"
)

// Fleet decides requests as a fleet of nodes would and measures the result. It implements
// algorithms.Limiter so a scenario runs it like any single limiter; Name must be told each
// key's client name (SetName) before the key's first decision, for hash routing and store
// key names. It is not safe for concurrent use.
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

	shared    *store.Limiter
	leaser    *store.Limiter
	nonAtomic *store.NonAtomic
	racy      *racy // shared-racy (racy.go)
	timing          // what decisions waited, and the breakers (breaker.go, latency.go)
	designs         // owner, global-sync, failovers, eviction (designs.go)

	names []string
	keys  []keyStats
	label string

	decisions, roundTrips       int64
	outageAdmitted, outageRefus int64
	outagePeak                  int64
	alerted                     int // outages alerted so far (index+1 of the last)
	alerts                      int
	alert                       string
	crashes                     int64
	leasesOutstandingMax        int64
	nodePeak                    int64
	outageNodePeak              int64
	nodesMax                    int
	err                         error

	// Decisions Defer holds until Flush, and the script calls they wait for.
	held  []held
	calls []store.Call
}

var _ algorithms.Limiter = (*Fleet)(nil)

type keyStats struct {
	admitted algorithms.Log // across the fleet, trailing window
	peak     int64
	refused  bool
}

type node struct {
	skew         int64
	local        algorithms.Limiter // local placement
	guard        algorithms.Limiter // two-tier and fail-open-local
	admitted     []algorithms.Log   // per key, this node's admissions in the trailing window
	duringOutage []algorithms.Log   // per key, this node's admissions while the store was down
	leases       []lease            // per key
}

type lease struct {
	tokens  int64
	expires int64 // ns
	// askAfter is when the node may ask the central bucket again after it came back
	// short: the time the bucket takes to refill one lease. Until then the node refuses
	// on its own, so a client over its limit does not cost a round trip per request.
	askAfter int64
}

// New builds a fleet deciding with algorithm under policy p. st is the shared store
// (ignored by the local placement); rng is the run's random source (random balancer,
// crashes).
func New(c Config, algorithm string, p algorithms.Policy, st store.Store, rng *rand.Rand) (*Fleet, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if c.Lease == 0 {
		c.Lease = 10
	}
	if c.LeaseTTL == 0 {
		c.LeaseTTL = p.Window
	}
	if c.StoreTimeout == 0 {
		c.StoreTimeout = DefaultStoreTimeout
	}
	c.VNodes = cmp.Or(c.VNodes, DefaultVNodes)
	c.Forward = cmp.Or(c.Forward, "batched")
	c.BatchWait = cmp.Or(c.BatchWait, DefaultBatchWait)
	c.BatchLimit = cmp.Or(c.BatchLimit, DefaultBatchLimit)
	c.SyncTo = cmp.Or(c.SyncTo, "owner")
	if c.Eviction != nil && c.UsesStore() && algorithm == "sliding-log" {
		return nil, fmt.Errorf("eviction: no memory model of the sliding log's sorted set; run it with another algorithm")
	}
	f := &Fleet{cfg: c, algorithm: algorithm, policy: p, rng: rng, nodesMax: c.Nodes}
	f.nodeShare = share(p, c.Nodes)
	f.guard = c.Guard
	if f.guard.Limit == 0 {
		f.guard = algorithms.Policy{Limit: (2*p.Limit + int64(c.Nodes) - 1) / int64(c.Nodes), Window: p.Window}
	}
	if f.guard.Window == 0 {
		f.guard.Window = p.Window
	}
	if _, err := algorithms.New(algorithm, f.nodeShare); err != nil {
		return nil, err
	}
	var err error
	if f.st, err = f.newDesigns(st); err != nil {
		return nil, err
	}
	st = f.st
	switch c.Placement {
	case "shared", "two-tier":
		f.shared, err = store.NewLimiter(st, algorithm, p, c.Prefix)
	case "leased":
		f.leaser, err = store.NewLimiter(st, "lease", p, c.Prefix)
	case "shared-nonatomic":
		f.nonAtomic, err = store.NewNonAtomic(st, p, c.Prefix, c.TTLWindowKey)
	case "shared-racy":
		f.racy, err = newRacy(st, algorithm, p, c, func(at int64) bool {
			_, o := f.outageAt(time.Duration(at - c.Epoch))
			return o != nil
		})
	}
	if err != nil {
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
	if f.cfg.LocalRecompute && f.cfg.Placement == "local" && n != f.active && f.active > 0 {
		f.nodeShare = share(f.policy, n)
		for _, nd := range f.nodes {
			nd.local, _ = algorithms.New(f.algorithm, f.nodeShare)
		}
	}
	for len(f.nodes) < n {
		nd := &node{skew: skewOf(len(f.nodes), f.cfg.Skew)}
		nd.local, _ = algorithms.New(f.algorithm, f.nodeShare)
		nd.guard, _ = algorithms.New(f.algorithm, f.guard)
		f.nodes = append(f.nodes, nd)
	}
	f.active = n
	f.nodesMax = max(f.nodesMax, n)
	f.resizeDesigns(n)
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
		f.keys = append(f.keys, keyStats{})
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

// Algorithm is the algorithm, or the mechanism the placement imposes ("lease",
// "incr-expire").
func (f *Fleet) Algorithm() string {
	switch f.cfg.Placement {
	case "leased":
		return "lease"
	case "shared-nonatomic":
		return "incr-expire"
	}
	return f.algorithm
}

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
	t := f.begin(key, now, cost)
	if t.ask {
		r, err := f.shared.Allow(f.names[key], t.at(), t.cost)
		t.allowed, t.remaining = r.Allowed && err == nil, r.Remaining
		f.storeRefused(&t, err)
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
	allowed            bool
	remaining          int64
	// ask says the shared script decides: allowed and remaining come from its reply.
	ask bool
}

// begin takes the steps of a decision up to the shared script, which it leaves to the
// caller when t.ask is set; the other placements' store calls are made here.
func (f *Fleet) begin(key uint32, now int64, cost int64) ticket {
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
	oi, outage := f.outageFor(ni, elapsed)
	if outage != nil && f.cfg.Placement != "local" && f.alerted <= oi {
		f.raise(oi, outage)
	}
	t := ticket{key: key, node: ni, nd: nd, now: now, nodeNow: nodeNow, cost: cost, inOutage: outage != nil && f.cfg.UsesStore()}

	name := f.names[key]
	placement := f.cfg.Placement
	if f.err != nil {
		// The store failed outside a scripted outage: the run is over, and every later
		// call would wait out its own timeout. Refuse without asking.
		placement = ""
	}
	switch placement {
	case "local":
		d := nd.local.Allow(key, nodeNow, cost)
		t.allowed, t.remaining = d.Allowed, d.Remaining
	case "shared", "two-tier":
		if f.cfg.Placement == "two-tier" {
			if g := nd.guard.Allow(key, nodeNow, cost); !g.Allowed {
				break // the guard refuses without asking the store
			}
		}
		if o := f.reach(&t, outage); o != nil {
			t.allowed = f.failover(o, nd, key, nodeNow, cost, f.cfg.Placement == "two-tier")
			break
		}
		t.trips, t.ask = 1, true
	case "leased":
		t.allowed, t.trips = f.spendLease(&t, outage)
	case "shared-nonatomic":
		if o := f.reach(&t, outage); o != nil {
			t.allowed = f.failover(o, nd, key, nodeNow, cost, false)
			break
		}
		crash := f.cfg.CrashProbability > 0 && f.rng.Float64() < f.cfg.CrashProbability
		r, err := f.nonAtomic.Allow(name, t.at(), cost, crash)
		t.trips = r.RoundTrips
		if r.Crashed {
			f.crashes++
		}
		t.allowed, t.remaining = r.Allowed && err == nil, r.Remaining
		f.storeRefused(&t, err)
	case "shared-racy":
		if o := f.reach(&t, outage); o != nil {
			t.allowed = f.failover(o, nd, key, nodeNow, cost, false)
			break
		}
		r, trips, err := f.racy.decide(ni, name, now, nodeNow, cost)
		t.trips = trips
		t.allowed, t.remaining = r.Allowed && err == nil, r.Remaining
		f.storeRefused(&t, err)
	case "owner":
		f.decideOwned(&t)
	case "global-sync":
		f.decideGlobal(&t)
	}
	return t
}

// end records a decided ticket in the fleet's measures and returns the decision.
func (f *Fleet) end(t ticket) algorithms.Decision {
	if f.err != nil {
		t.allowed = false
	}
	f.judgeShadow(&t)
	f.decisions++
	f.roundTrips += int64(t.trips)
	f.latency.add(time.Duration(t.trips)*f.cfg.Latency + t.wait)
	f.observe(t.nd, t.key, t.now, t.cost, t.allowed, t.inOutage)
	return algorithms.Decision{Allowed: t.allowed, Remaining: t.remaining}
}

// failover decides during an outage by the outage's policy; guarded says the node-local
// guard has already admitted this request (two-tier).
func (f *Fleet) failover(o *Outage, nd *node, key uint32, nodeNow, cost int64, guarded bool) bool {
	switch o.Policy {
	case "fail-open":
		return true
	case "fail-open-local":
		if guarded {
			return true
		}
		return nd.guard.Allow(key, nodeNow, cost).Allowed
	}
	return false
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
		f.alert = fmt.Sprintf("nodes 0–%d cut off at %s for %s; they %s", o.Nodes-1, o.At, o.For, strings.TrimPrefix(what, "nodes "))
		return
	}
	f.alert = fmt.Sprintf("store unreachable at %s for %s; %s", o.At, o.For, what)
}

// spendLease spends a leased token for t's key on its node, borrowing Lease more from the
// central bucket (one round trip) when the node holds too few.
func (f *Fleet) spendLease(t *ticket, outage *Outage) (allowed bool, trips int) {
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
		granted, err := f.leaser.Lease(f.names[key], at, want)
		trips = 1
		if f.storeRefused(t, err) {
			return t.allowed, trips
		}
		if granted > 0 {
			l.tokens += granted
			l.expires = nodeNow + int64(f.cfg.LeaseTTL)
		}
		if granted < want {
			l.askAfter = nodeNow + want*int64(f.policy.Window)/f.policy.Limit
		}
	}
	if l.tokens < cost {
		return false, trips
	}
	l.tokens -= cost
	return true, trips
}

func (f *Fleet) fail(err error) {
	if err != nil && f.err == nil {
		f.err = err
	}
}

// outstanding is the leased, unspent, unexpired tokens all nodes hold for key at now.
func (f *Fleet) outstanding(key uint32, now int64) int64 {
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

// observe records one decision in the fleet's own measures.
func (f *Fleet) observe(nd *node, key uint32, now, cost int64, allowed, inOutage bool) {
	ks := &f.keys[key]
	if f.cfg.Placement == "leased" {
		f.leasesOutstandingMax = max(f.leasesOutstandingMax, f.outstanding(key, now))
	}
	w := int64(f.policy.Window)
	ks.admitted.Expire(now - w)
	for int(key) >= len(nd.admitted) {
		nd.admitted = append(nd.admitted, algorithms.Log{})
	}
	nl := &nd.admitted[key]
	nl.Expire(now - w)
	if inOutage {
		if allowed {
			f.outageAdmitted++
		} else {
			f.outageRefus++
		}
	}
	if !allowed {
		ks.refused = true
		return
	}
	ks.admitted.Push(now, cost)
	ks.peak = max(ks.peak, ks.admitted.Sum())
	f.peakAround(now, ks.admitted.Sum())
	nl.Push(now, cost)
	f.nodePeak = max(f.nodePeak, nl.Sum())
	if inOutage {
		f.outagePeak = max(f.outagePeak, ks.admitted.Sum())
		for int(key) >= len(nd.duringOutage) {
			nd.duringOutage = append(nd.duringOutage, algorithms.Log{})
		}
		ol := &nd.duringOutage[key]
		ol.Expire(now - w)
		ol.Push(now, cost)
		f.outageNodePeak = max(f.outageNodePeak, ol.Sum())
	}
}

// Finish inspects the store for keys left without a TTL and returns the fleet's figures.
func (f *Fleet) Finish(variant string) (*report.Distributed, error) {
	f.settleDesigns()
	d := &report.Distributed{
		Variant:                variant,
		Placement:              f.cfg.Placement,
		Balancer:               f.cfg.Balancer,
		Nodes:                  f.cfg.Nodes,
		NodesMax:               f.nodesMax,
		StoreRoundTripsTotal:   f.roundTrips,
		NodePeakWindowAdmitted: f.nodePeak,
		OutageNodePeak:         f.outageNodePeak,
		LeasesOutstandingMax:   f.leasesOutstandingMax,
		OutageAdmitted:         f.outageAdmitted,
		OutageRefused:          f.outageRefus,
		OutageOverAdmission:    float64(f.outagePeak) / float64(f.policy.Limit),
		Alerts:                 f.alerts,
		Alert:                  f.alert,
		Crashes:                f.crashes,
	}
	if f.cfg.UsesStore() {
		d.Store = f.st.Name()
	}
	if f.cfg.Placement == "two-tier" || f.hasPolicy("fail-open-local") {
		d.GuardLimit = f.guard.Limit
	}
	if f.decisions > 0 {
		d.StoreRoundTrips = float64(f.roundTrips) / float64(f.decisions)
	}
	f.timing.fill(d)
	d.StoreLatencyMS = float64(f.cfg.Latency) / float64(time.Millisecond)
	if f.racy != nil {
		if f.err == nil {
			f.fail(f.racy.drain()) // the writes still in flight land, as they would
		}
		d.StaleReads, d.LostWrites = f.racy.staleReads, f.racy.lostWrites
	}
	first := true
	for _, ks := range f.keys {
		d.EffectiveLimit = max(d.EffectiveLimit, ks.peak)
		if !ks.refused {
			continue
		}
		s := float64(ks.peak) / float64(f.policy.Limit)
		if first || s < d.ClientShareMin {
			d.ClientShareMin = s
		}
		d.ClientShareMax = max(d.ClientShareMax, s)
		first = false
	}
	if f.err != nil {
		return d, f.err
	}
	if !f.cfg.UsesStore() {
		return d, nil
	}
	var err error
	d.BlockedForever, d.LeakedKeys, err = store.Audit(f.st, f.cfg.Prefix, f.policy.Limit, f.cfg.TTLWindowKey)
	if err != nil {
		return d, err
	}
	// A leaked key is the counter the deployed pattern leaves: a string of INCR.
	counterBytes, _, _ := store.ModelBytes("fixed-window", f.policy.Limit)
	d.LeakedBytes = d.LeakedKeys * counterBytes
	return d, nil
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
	for _, l := range []*store.Limiter{f.shared, f.leaser} {
		if l != nil {
			l.SetClock(clock)
			l.SetKeep(keep)
		}
	}
	if f.nonAtomic != nil {
		f.nonAtomic.SetClock(clock)
		f.nonAtomic.SetKeep(keep)
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
