package claims

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/cluster"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/scenario"
)

// The designs the notes do not draw, and the statements their own documentation makes.
const (
	secGubernator = "Beyond the notes: Gubernator's architecture (github.com/mailgun/gubernator, docs/architecture.md)"
	secKong       = "Beyond the notes: Kong's rate-limiting plugins (config.sync_rate)"
	secRedis      = "Beyond the notes: Redis's documentation on replication and on eviction"
)

// fleetCite cites a fleet row's first cells, as the fleet table prints them.
func fleetCite(ev *Evidence, x report.Result) {
	ev.cite(x.Algorithm, x.Distributed.Variant, cellInt(x.Requests), cellInt(x.Admitted), cellInt(x.Rejected), cellInt(x.Distributed.EffectiveLimit))
}

// rowsOf returns a report's fleet rows whose variant satisfies keep, in report order.
func rowsOf(rep *report.Report, keep func(d *report.Distributed) bool) []report.Result {
	var out []report.Result
	for _, x := range rep.Results {
		if d := x.Distributed; d != nil && keep(d) {
			out = append(out, x)
		}
	}
	return out
}

// ownerExact is the owner placement without a membership change.
type ownerExact struct {
	scenario string
	limit    int64
	rows     []ownerRow
}

type ownerRow struct {
	variant   string
	effective int64
	hops      float64
	p99       float64 // ms
}

// ownerSlack is how far above the limit an owner's fleet may go and still count as exact:
// one owner's count has no race, so anything beyond a few units is not the design's.
const ownerSlack = 0.02

// Judge: holds when every owner fleet holds the limit (within ownerSlack) with at most one
// hop a decision; does not hold when one goes over, or takes more than a hop.
func (m ownerExact) Judge() Judgement {
	for _, r := range m.rows {
		if float64(r.effective) > float64(m.limit)*(1+ownerSlack) {
			return Judgement{DoesNotHold, fmt.Sprintf("%s let a client have %d where the limit is %d", r.variant, r.effective, m.limit)}
		}
		if r.hops > 1 {
			return Judgement{DoesNotHold, fmt.Sprintf("%s took %.3f hops a decision", r.variant, r.hops)}
		}
	}
	return Judgement{Holds, ""}
}

func (m ownerExact) Text() string {
	var parts []string
	for _, r := range m.rows {
		parts = append(parts, fmt.Sprintf("%s: effective_limit %d, %.3f peer hops a decision, added latency p99 %.2f ms", r.variant, r.effective, r.hops, r.p99))
	}
	return fmt.Sprintf("%s, the owner placement (no shared store), limit %d: %s", m.scenario, m.limit, strings.Join(parts, "; "))
}

func measureOwnerExact(s *session) (Measurement, error) {
	rep, ev, err := s.report("run", "cluster-placements")
	if err != nil {
		return nil, err
	}
	m := ownerExact{scenario: rep.Scenario, limit: rep.Policy.Limit}
	for _, x := range rowsOf(rep, func(d *report.Distributed) bool { return d.Placement == "owner" }) {
		d := x.Distributed
		m.rows = append(m.rows, ownerRow{d.Variant, d.EffectiveLimit, d.PeerHops, d.AddedLatencyP99MS})
		fleetCite(ev, x)
	}
	if len(m.rows) == 0 {
		return nil, fmt.Errorf("cluster-placements has no owner variant")
	}
	return m, nil
}

// batching compares forwarding each request with batching them.
type batching struct {
	scenario, algorithm           string
	rate                          float64 // requests a second through the fleet
	direct, batched               float64 // peer requests per decision
	directP99, batchedP99, window float64 // ms
}

// batchingCut is how much batching must cut the peer requests for "tremendously": by half.
const batchingCut = 0.5

// Judge: holds when batching cuts the peer requests by batchingCut or more; holds with a
// caveat when it cuts them by less (the window gathers few requests at this rate); does
// not hold when it cuts nothing.
func (m batching) Judge() Judgement {
	switch {
	case m.batched <= (1-batchingCut)*m.direct:
		return Judgement{Holds, ""}
	case m.batched < m.direct:
		return Judgement{HoldsWithCaveat, fmt.Sprintf("at %.0f requests a second a %.1f ms window gathers few: %.1f%% fewer peer requests, for %.2f ms more added latency at p99; the cut grows with the rate between each pair of nodes",
			m.rate, m.window, 100*(1-m.batched/m.direct), m.batchedP99-m.directP99)}
	}
	return Judgement{DoesNotHold, "batching sent no fewer peer requests"}
}

func (m batching) Text() string {
	return fmt.Sprintf("%s, %s, %.0f requests a second over the fleet: forwarding each request sends %.3f peer requests a decision (added latency p99 %.2f ms); batching over %.1f ms sends %.3f (p99 %.2f ms)",
		m.scenario, m.algorithm, m.rate, m.direct, m.directP99, m.window, m.batched, m.batchedP99)
}

func measureBatching(s *session) (Measurement, error) {
	rep, ev, err := s.report("run", "cluster-owner")
	if err != nil {
		return nil, err
	}
	alg := algorithms.SlidingWindowName
	direct, err := fleetRow(rep, "direct", alg)
	if err != nil {
		return nil, err
	}
	batched, err := fleetRow(rep, "batched", alg)
	if err != nil {
		return nil, err
	}
	sc, err := scenario.Load("cluster-owner")
	if err != nil {
		return nil, err
	}
	fleetCite(ev, direct)
	fleetCite(ev, batched)
	ev.cite(alg, "direct", cellFixed(direct.Distributed.PeerHops, 3), cellFixed(direct.Distributed.PeerMessages, 3))
	ev.cite(alg, "batched", cellFixed(batched.Distributed.PeerHops, 3), cellFixed(batched.Distributed.PeerMessages, 3))
	return batching{scenario: rep.Scenario, algorithm: alg, rate: float64(direct.Requests) / time.Duration(sc.Duration).Seconds(),
		direct: direct.Distributed.PeerMessages, batched: batched.Distributed.PeerMessages,
		directP99: direct.Distributed.AddedLatencyP99MS, batchedP99: batched.Distributed.AddedLatencyP99MS,
		window: float64(cluster.DefaultBatchWait) / float64(time.Millisecond)}, nil
}

// cacheLoss is what a membership change cost: keys moved to owners that start empty.
type cacheLoss struct {
	scenario       string
	keys, moved    int64
	overAdmission  float64
	window         time.Duration
	before, after  int
	effective, lim int64
}

// subsetMax is the share of keys that may move for "a small subset"; shortPeriod the
// longest over-request that is "a short period (usually seconds)".
const (
	subsetMax   = 0.5
	shortPeriod = 10 * time.Second
)

// Judge: the over-request lasts at most a window (the new owner's count fills within it).
// Holds when the keys moved are a subset (≤ subsetMax) and the window is short (≤
// shortPeriod); holds with a caveat when a subset moved but the window is longer; does
// not hold when most keys moved, or none went over.
func (m cacheLoss) Judge() Judgement {
	share := ratioOf(float64(m.moved), float64(m.keys))
	switch {
	case m.overAdmission <= 1:
		return Judgement{DoesNotHold, "no key got more after the change than the same fleet gave it without one"}
	case share > subsetMax:
		return Judgement{DoesNotHold, fmt.Sprintf("%.0f%% of the keys moved", 100*share)}
	case m.window <= shortPeriod:
		return Judgement{Holds, ""}
	}
	return Judgement{HoldsWithCaveat, fmt.Sprintf("a subset moved (%.0f%% of the keys), but a moved key over its limit can pass up to a whole window more — here %s, not seconds: the over-request lasts as long as the limit's window",
		100*share, m.window)}
}

func (m cacheLoss) Text() string {
	return fmt.Sprintf("%s: scaling from %d to %d nodes moved %d of %d keys to owners that start empty; the busiest key's trailing window then held %.2f× what it held there without the change (effective_limit %d against %d, window %s)",
		m.scenario, m.before, m.after, m.moved, m.keys, m.overAdmission, m.effective, m.lim, m.window)
}

func measureCacheLoss(s *session) (Measurement, error) {
	rep, ev, err := s.report("run", "cluster-owner")
	if err != nil {
		return nil, err
	}
	x, err := fleetRow(rep, "direct", algorithms.SlidingWindowName)
	if err != nil {
		return nil, err
	}
	fleetCite(ev, x)
	d := x.Distributed
	return cacheLoss{scenario: rep.Scenario, keys: int64(x.Keys), moved: d.OwnershipMoves, overAdmission: d.MembershipOverAdmission,
		window: time.Duration(rep.Policy.Window), before: d.Nodes, after: d.NodesMax, effective: d.EffectiveLimit, lim: rep.Policy.Limit}, nil
}

// syncPoint is one global-sync fleet.
type syncPoint struct {
	variant   string
	nodes     int
	sync      time.Duration
	effective int64
	hops      float64
	exchanges float64 // per decision
}

// globalSync compares global-sync fleets across their sync intervals, for one target.
type globalSync struct {
	scenario, target, algorithm string
	limit                       int64
	points                      []syncPoint // sync 0 first
}

// syncSlack is how far above the limit a fleet may go and still count as accurate.
const syncSlack = 0.02

func (m globalSync) exact(p syncPoint) bool {
	return float64(p.effective) <= float64(m.limit)*(1+syncSlack)
}

func (m globalSync) describe() string {
	var parts []string
	for _, p := range m.points {
		parts = append(parts, fmt.Sprintf("sync %s on %d nodes %d (%.3f hops, %.3f exchanges a decision)", p.sync, p.nodes, p.effective, p.hops, p.exchanges))
	}
	return fmt.Sprintf("%s, %s syncing with the %s, limit %d, effective_limit: %s", m.scenario, m.algorithm, m.target, m.limit, strings.Join(parts, "; "))
}

func measureGlobalSync(target string) func(*session) (globalSync, error) {
	return func(s *session) (globalSync, error) {
		rep, ev, err := s.report("run", "cluster-global-sync")
		if err != nil {
			return globalSync{}, err
		}
		// The store's counters run the two-counter window; Gubernator's owners their
		// TOKEN_BUCKET (a fixed window from the first hit).
		alg := algorithms.SlidingWindowName
		if target == "owner" {
			alg = algorithms.TokenBucketName
		}
		m := globalSync{scenario: rep.Scenario, target: target, algorithm: alg, limit: rep.Policy.Limit}
		for _, x := range rowsOf(rep, func(d *report.Distributed) bool { return d.SyncTo == target }) {
			if x.Algorithm != m.algorithm {
				continue
			}
			d := x.Distributed
			p := syncPoint{variant: d.Variant, nodes: d.Nodes, sync: time.Duration(d.Sync), effective: d.EffectiveLimit, hops: d.PeerHops}
			if x.Requests > 0 {
				p.exchanges = float64(d.SyncExchanges) / float64(x.Requests)
			}
			m.points = append(m.points, p)
			fleetCite(ev, x)
		}
		slices.SortStableFunc(m.points, func(a, b syncPoint) int { return cmp.Compare(a.sync, b.sync) })
		if len(m.points) < 2 || m.points[0].sync != 0 {
			return m, fmt.Errorf("cluster-global-sync has no sync 0 and later interval to the %s", target)
		}
		return m, nil
	}
}

// kongSync is Kong's statement: counters are accurate only when sync_rate is 0.
type kongSync struct{ globalSync }

// Judge: holds when sync 0 holds the limit (within syncSlack) and every later interval
// goes over it; holds with a caveat when short intervals also held it; does not hold when
// sync 0 goes over, or no interval does.
func (m kongSync) Judge() Judgement {
	zero, rest := m.points[0], m.points[1:]
	if !m.exact(zero) {
		return Judgement{DoesNotHold, fmt.Sprintf("sync 0 let a client have %d", zero.effective)}
	}
	var held []string
	for _, p := range rest {
		if m.exact(p) {
			held = append(held, p.sync.String())
		}
	}
	switch {
	case len(held) == len(rest):
		return Judgement{DoesNotHold, "every interval held the limit"}
	case len(held) > 0:
		return Judgement{HoldsWithCaveat, fmt.Sprintf("intervals of %s also held the limit within %.0f%% at this rate: the error is the traffic of about one interval", strings.Join(held, ", "), 100*syncSlack)}
	}
	return Judgement{Holds, ""}
}

func (m kongSync) Text() string { return m.describe() }

func measureKongSync(s *session) (Measurement, error) {
	m, err := measureGlobalSync("store")(s)
	return kongSync{m}, err
}

// gubernatorGlobal is Gubernator's statement: GLOBAL gives scale at the cost of
// consistency.
type gubernatorGlobal struct{ globalSync }

// Judge: holds when the GLOBAL fleets (sync > 0) take fewer hops a decision than the
// synchronous one and go over the limit while the synchronous one holds it; does not
// hold when they take as many hops or keep the limit.
func (m gubernatorGlobal) Judge() Judgement {
	zero := m.points[0]
	fewer, over := true, false
	for _, p := range m.points[1:] {
		fewer = fewer && p.hops < zero.hops
		over = over || !m.exact(p)
	}
	switch {
	case !m.exact(zero):
		return Judgement{DoesNotHold, fmt.Sprintf("even synchronously the fleet let a client have %d", zero.effective)}
	case !fewer:
		return Judgement{DoesNotHold, "answering from the nodes' caches took as many hops a decision"}
	case !over:
		return Judgement{DoesNotHold, "the caches cost no consistency: every interval held the limit"}
	}
	return Judgement{Holds, ""}
}

func (m gubernatorGlobal) Text() string { return m.describe() }

func measureGubernatorGlobal(s *session) (Measurement, error) {
	m, err := measureGlobalSync("owner")(s)
	return gubernatorGlobal{m}, err
}

// asyncReplication is what a failover lost, by the replica's lag.
type asyncReplication struct {
	scenario string
	points   []lagPoint // by lag
}

type lagPoint struct {
	variant          string
	lag              time.Duration
	lost, freePasses int64
	effective        int64
}

// Judge: holds when a replica that keeps up loses nothing and every lagging one loses
// writes that give clients free passes; does not hold when a lagging replica loses none.
func (m asyncReplication) Judge() Judgement {
	for _, p := range m.points {
		switch {
		case p.lag == 0 && (p.lost > 0 || p.freePasses > 0):
			return Judgement{DoesNotHold, fmt.Sprintf("a replica without lag lost %d writes", p.lost)}
		case p.lag > 0 && (p.lost == 0 || p.freePasses == 0):
			return Judgement{DoesNotHold, fmt.Sprintf("a replica %s behind lost %d writes, %d free passes", p.lag, p.lost, p.freePasses)}
		}
	}
	return Judgement{Holds, ""}
}

func (m asyncReplication) Text() string {
	var parts []string
	for _, p := range m.points {
		parts = append(parts, fmt.Sprintf("lag %s: %d writes lost, %d free passes, effective_limit %d", p.lag, p.lost, p.freePasses, p.effective))
	}
	return fmt.Sprintf("%s, fixed-window counters on a shared store whose primary fails over to a lagging replica: %s", m.scenario, strings.Join(parts, "; "))
}

func measureAsyncReplication(s *session) (Measurement, error) {
	rep, ev, err := s.report("run", "cluster-failover")
	if err != nil {
		return nil, err
	}
	m := asyncReplication{scenario: rep.Scenario}
	for _, x := range rowsOf(rep, func(d *report.Distributed) bool { return d.Failovers > 0 && d.Reshards == 0 }) {
		if x.Algorithm != algorithms.FixedWindowName {
			continue
		}
		d := x.Distributed
		i := slices.IndexFunc(m.points, func(p lagPoint) bool { return p.variant == d.Variant })
		if i < 0 {
			m.points = append(m.points, lagPoint{variant: d.Variant, lag: time.Duration(d.FailoverLag)})
			i = len(m.points) - 1
		}
		p := &m.points[i]
		p.lost += d.LostWrites
		p.freePasses += d.FreePasses
		p.effective = max(p.effective, d.EffectiveLimit)
		fleetCite(ev, x)
	}
	if len(m.points) < 2 {
		return nil, fmt.Errorf("cluster-failover has fewer than two failover variants")
	}
	slices.SortStableFunc(m.points, func(a, b lagPoint) int { return cmp.Compare(a.lag, b.lag) })
	return m, nil
}

// evictionFree is what a store under maxmemory did to its counters.
type evictionFree struct {
	scenario, algorithm string
	points              []memPoint
}

type memPoint struct {
	variant, policy        string
	maxmemory              int64
	evicted, oom, freePass int64
	freeKeys, keys         int64
}

// Judge: holds when, under an evicting policy, a maxmemory too small for the keys gives
// free passes and one large enough gives none, and noeviction refuses writes; holds with
// a caveat when every maxmemory gave free passes (none was large enough); does not hold
// when eviction gave none.
func (m evictionFree) Judge() Judgement {
	var small, large *memPoint
	oom := false
	for i := range m.points {
		p := &m.points[i]
		switch p.policy {
		case "noeviction":
			oom = oom || p.oom > 0
			continue
		}
		if small == nil || p.maxmemory < small.maxmemory {
			small = p
		}
		if large == nil || p.maxmemory > large.maxmemory {
			large = p
		}
	}
	switch {
	case small == nil || small.freePass == 0:
		return Judgement{DoesNotHold, "no evicted counter gave a free pass"}
	case !oom:
		return Judgement{DoesNotHold, "noeviction refused no write"}
	case large.freePass > 0:
		return Judgement{HoldsWithCaveat, fmt.Sprintf("even %d bytes were too few for the keys: free passes at every maxmemory", large.maxmemory)}
	}
	return Judgement{Holds, ""}
}

func (m evictionFree) Text() string {
	var parts []string
	for _, p := range m.points {
		what := fmt.Sprintf("%d evicted", p.evicted)
		if p.policy == "noeviction" {
			what = fmt.Sprintf("%d writes refused", p.oom)
		}
		parts = append(parts, fmt.Sprintf("%s at %d KiB: %s, %d free passes to %d of %d keys", p.policy, p.maxmemory>>10, what, p.freePass, p.freeKeys, p.keys))
	}
	return fmt.Sprintf("%s, %s counters: %s", m.scenario, m.algorithm, strings.Join(parts, "; "))
}

func measureEvictionFree(s *session) (Measurement, error) {
	rep, ev, err := s.report("run", "cluster-eviction")
	if err != nil {
		return nil, err
	}
	m := evictionFree{scenario: rep.Scenario, algorithm: algorithms.FixedWindowName}
	for _, x := range rowsOf(rep, func(d *report.Distributed) bool { return d.EvictionPolicy != "" }) {
		if x.Algorithm != m.algorithm {
			continue
		}
		d := x.Distributed
		m.points = append(m.points, memPoint{variant: d.Variant, policy: d.EvictionPolicy, maxmemory: d.MaxMemory, evicted: d.EvictedKeys,
			oom: d.OOMErrors, freePass: d.FreePasses, freeKeys: d.FreePassKeys, keys: int64(x.Keys)})
		fleetCite(ev, x)
	}
	if len(m.points) == 0 {
		return nil, fmt.Errorf("cluster-eviction has no %s rows under memory pressure", m.algorithm)
	}
	return m, nil
}
