package claims

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/scenario"
)

// racyPlacement is the placement that reads, decides in the node and writes back: the
// race the notes start their distributed section with.
const racyPlacement = "shared-racy"

// fleetPoint is one fleet row's effective limit.
type fleetPoint struct {
	variant, algorithm string
	nodes              int
	latency            time.Duration // the store's round trip
	effective          int64
}

// race compares fleets whose nodes read, decide and write back with the atomic script.
type race struct {
	scenario string // the built-in scenario that runs the racy placement; "" when none does
	limit    int64
	racy     []fleetPoint
	atomic   []fleetPoint
}

// raceSlack is how far above the atomic script's figure (and how far apart the atomic
// script's own figures) a fleet may go before it counts as a difference: a shared store's
// count is exact, so anything beyond a few units is the race.
const raceSlack = 0.02

// span is the lowest and highest effective limit of an algorithm's points.
type span struct{ lo, hi fleetPoint }

// spans groups points by algorithm, in the order the algorithms first appear.
func spans(ps []fleetPoint) ([]string, map[string]span) {
	var order []string
	out := map[string]span{}
	for _, p := range ps {
		s, ok := out[p.algorithm]
		if !ok {
			order = append(order, p.algorithm)
			s = span{p, p}
		}
		if p.effective < s.lo.effective {
			s.lo = p
		}
		if p.effective > s.hi.effective {
			s.hi = p
		}
		out[p.algorithm] = s
	}
	return order, out
}

// Judge: not checkable when no built-in scenario runs the racy placement. Each racy fleet
// is held against the atomic script of its algorithm. Holds when some racy fleet goes
// above the atomic script's highest figure by more than raceSlack of the limit while the
// atomic script gives the same figure (within raceSlack) at every node count and latency;
// holds with a caveat when the atomic script's figure moves with them too; does not hold
// when no racy fleet goes above its atomic script.
func (m race) Judge() Judgement {
	if m.scenario == "" {
		return Judgement{NotCheckable, "this build has no " + racyPlacement + " placement to race; the claim is measured from the built-in scenario that runs it in the most fleets"}
	}
	slack := int64(raceSlack * float64(m.limit))
	_, atomic := spans(m.atomic)
	raced := slices.ContainsFunc(m.racy, func(p fleetPoint) bool {
		a, ok := atomic[p.algorithm]
		return ok && p.effective > a.hi.effective+slack
	})
	flat := true
	for _, a := range atomic {
		flat = flat && a.hi.effective-a.lo.effective <= slack
	}
	switch {
	case raced && flat:
		return Judgement{Holds, ""}
	case raced:
		return Judgement{HoldsWithCaveat, "the atomic script's own figure also moved with node count and latency"}
	}
	return Judgement{DoesNotHold, "no racy fleet went above the atomic script"}
}

func (m race) Text() string {
	at := func(p fleetPoint) string {
		nodes := fmt.Sprintf("%d nodes", p.nodes)
		if p.nodes == 1 {
			nodes = "1 node"
		}
		return fmt.Sprintf("%s, %s round trip", nodes, p.latency)
	}
	if m.scenario == "" {
		order, atomic := spans(m.atomic)
		var parts []string
		for _, alg := range order {
			parts = append(parts, fmt.Sprintf("%s %d", alg, atomic[alg].hi.effective))
		}
		return fmt.Sprintf("no built-in scenario runs a %s fleet; the atomic script on cluster-shared, for comparison: effective_limit %s against %d",
			racyPlacement, strings.Join(parts, ", "), m.limit)
	}
	order, racy := spans(m.racy)
	_, atomic := spans(m.atomic)
	var parts []string
	for _, alg := range order {
		r, a := racy[alg], atomic[alg]
		atomicText := fmt.Sprintf("%d", a.lo.effective)
		if a.hi.effective != a.lo.effective {
			atomicText = fmt.Sprintf("%d–%d", a.lo.effective, a.hi.effective)
		}
		parts = append(parts, fmt.Sprintf("%s %d (%s) to %d (%s), atomic script %s", alg,
			r.lo.effective, at(r.lo), r.hi.effective, at(r.hi), atomicText))
	}
	return fmt.Sprintf("%s, effective_limit against %d, read, decide, write back at %d settings of node count and store latency: %s",
		m.scenario, m.limit, len(m.racy)/max(len(order), 1), strings.Join(parts, "; "))
}

// racyScenario is the built-in scenario that runs the racy placement in the most fleets
// (its top fleet and its variants), the first of them in name order on a tie; "" when none
// does. A scenario that shows the racy placement once beside others (cluster-placements)
// does not take the claim from the one that races it at every node count and latency.
func racyScenario() (string, error) {
	best, most := "", 0
	for _, name := range scenario.Builtins() {
		sc, err := scenario.Load(name)
		if err != nil {
			return "", err
		}
		c := sc.Cluster
		if c == nil {
			continue
		}
		n := 0
		for _, v := range c.Variants {
			if v.Placement == racyPlacement || v.Placement == "" && c.Placement == racyPlacement {
				n++
			}
		}
		if len(c.Variants) == 0 && c.Placement == racyPlacement {
			n = 1
		}
		if n > most {
			best, most = name, n
		}
	}
	return best, nil
}

func measureRace(s *session) (Measurement, error) {
	name, err := racyScenario()
	if err != nil {
		return nil, err
	}
	args := []string{"run", "cluster-shared"}
	if name != "" {
		args = []string{"run", name}
	}
	rep, ev, err := s.report(args...)
	if err != nil {
		return nil, err
	}
	m := race{scenario: name, limit: rep.Policy.Limit}
	for _, x := range rep.Results {
		d := x.Distributed
		if d == nil {
			continue
		}
		p := fleetPoint{variant: d.Variant, algorithm: x.Algorithm, nodes: d.Nodes,
			latency: time.Duration(d.StoreLatencyMS * float64(time.Millisecond)), effective: d.EffectiveLimit}
		switch d.Placement {
		case racyPlacement:
			m.racy = append(m.racy, p)
		case "shared":
			m.atomic = append(m.atomic, p)
		default:
			continue
		}
		ev.cite(x.Algorithm, d.Variant, cellInt(x.Requests), cellInt(x.Admitted), cellInt(x.Rejected), cellInt(d.EffectiveLimit))
	}
	return m, nil
}

// incrExpire is what a crash between INCR and EXPIRE left behind, under both key designs.
type incrExpire struct {
	clients, nodes                         int
	limit                                  int64
	window                                 time.Duration
	crashChance                            float64
	crashes                                int64
	ttlBlocked, ttlLeaked                  int64         // a counter named by client, its window its TTL
	shutOut                                int           // users refused from some moment to the end
	longest                                time.Duration // the longest such refusal
	stampedBlocked, stampedLeaked, leakedB int64         // a counter named by client and window
	atomicBlocked, atomicLeaked            int64
}

// Judge: not checkable when no process crashed. A key without a TTL that blocks its user
// under both key designs: holds; under the TTL-window key only, the window-named key (the
// notes' own rl:user_8812:1784056020) leaking instead: depends; blocking no one: does not
// hold.
func (m incrExpire) Judge() Judgement {
	ttl := m.ttlBlocked > 0 && m.shutOut > 0
	switch {
	case m.crashes == 0:
		return Judgement{NotCheckable, "no process crashed between INCR and EXPIRE"}
	case ttl && m.stampedBlocked > 0:
		return Judgement{Holds, ""}
	case ttl:
		return Judgement{Depends, either(
			[]string{fmt.Sprintf("for a counter named by client whose window is its TTL (%d keys left at the limit, %d users refused to the end)", m.ttlBlocked, m.shutOut)},
			[]string{fmt.Sprintf("for the notes' own key, which carries the window in its name (rl:user_8812:1784056020): a crash leaks the key (%d leaked) and blocks no one", m.stampedLeaked)})}
	}
	return Judgement{DoesNotHold, fmt.Sprintf("%d crashes left no user blocked", m.crashes)}
}

func (m incrExpire) Text() string {
	return fmt.Sprintf("%d clients well under %d per %s on %d nodes, %s chance of dying between INCR and EXPIRE: %d crashes. "+
		"Counter named by client, its window its TTL: %d keys left without a TTL at the limit (blocked_forever), %d more without a TTL, %d users refused every request from some moment to the end of the run (the longest for %s). "+
		"Counter named by client and window: %d blocked, %d keys leaked (%d bytes). Atomic scripts: %d blocked, %d leaked",
		m.clients, m.limit, m.window, m.nodes, pct(m.crashChance), m.crashes, m.ttlBlocked, m.ttlLeaked, m.shutOut, m.longest.Round(time.Second),
		m.stampedBlocked, m.stampedLeaked, m.leakedB, m.atomicBlocked, m.atomicLeaked)
}

func measureIncrExpire(s *session) (Measurement, error) {
	args := []string{"run", "cluster-nonatomic", "--decisions", "decisions.csv"}
	rep, ev, err := s.report(args...)
	if err != nil {
		return nil, err
	}
	ttlRow, err := fleetRow(rep, "incr-expire-ttl-window", "incr-expire")
	if err != nil {
		return nil, err
	}
	stampedRow, err := fleetRow(rep, "incr-expire-timestamped", "incr-expire")
	if err != nil {
		return nil, err
	}
	ttl, stamped := ttlRow.Distributed, stampedRow.Distributed
	m := incrExpire{
		clients: ttlRow.Keys, nodes: ttl.Nodes, limit: rep.Policy.Limit, window: time.Duration(rep.Policy.Window),
		crashes: ttl.Crashes, ttlBlocked: ttl.BlockedForever, ttlLeaked: ttl.LeakedKeys,
		stampedBlocked: stamped.BlockedForever, stampedLeaked: stamped.LeakedKeys, leakedB: stamped.LeakedBytes,
	}
	for _, x := range rep.Results {
		if d := x.Distributed; d != nil && d.Placement == "shared" {
			m.atomicBlocked += d.BlockedForever
			m.atomicLeaked += d.LeakedKeys
		}
	}
	ev.cite("incr-expire", "incr-expire-ttl-window", cellInt(ttl.BlockedForever), cellInt(ttl.LeakedKeys))
	ev.cite("incr-expire", "incr-expire-timestamped", cellInt(stamped.BlockedForever), cellInt(stamped.LeakedKeys))
	sc, err := scenario.Load("cluster-nonatomic")
	if err != nil {
		return nil, err
	}
	for _, f := range sc.Faults {
		if c, ok := f.Spec.(*scenario.CrashSpec); ok {
			m.crashChance = c.Probability
		}
	}
	ds, err := s.decisions(args...)
	if err != nil {
		return nil, err
	}
	m.shutOut, m.longest = shutOut(ds, "incr-expire@incr-expire-ttl-window")
	return m, nil
}

// shutOutAfter is how many refusals in a row, to the end of the run, make a user shut
// out: a user well under the limit is not refused three times running unless its key
// will not let it through again.
const shutOutAfter = 3

// shutOut counts the users whose every request from some moment to the end of the run
// was refused, at least shutOutAfter of them, and the longest such span.
func shutOut(ds []decision, algorithm string) (int, time.Duration) {
	var end time.Duration
	since := map[string]time.Duration{} // first refusal after the last admission
	refused := map[string]int{}
	for _, d := range ds {
		end = max(end, d.at)
		if d.algorithm != algorithm {
			continue
		}
		if d.allowed {
			delete(since, d.key)
			refused[d.key] = 0
			continue
		}
		if refused[d.key] == 0 {
			since[d.key] = d.at
		}
		refused[d.key]++
	}
	n, longest := 0, time.Duration(0)
	for key, at := range since {
		if refused[key] >= shutOutAfter {
			n++
			longest = max(longest, end-at)
		}
	}
	return n, longest
}

// atomicFleet is a fleet on a shared store where each decision is one script.
type atomicFleet struct {
	limit, burst int64
	nodes        int
	rows         []fleetRowFigures
}

type fleetRowFigures struct {
	algorithm  string
	effective  int64
	roundTrips float64
}

// Judge: holds when every counter algorithm holds the fleet to L and every bucket to
// b + r·W (here b + L), one round trip a decision; does not hold otherwise.
func (m atomicFleet) Judge() Judgement {
	for _, r := range m.rows {
		bound := m.limit
		if algorithms.IsBucket(r.algorithm) {
			bound = m.burst + m.limit
		}
		if r.effective > bound {
			return Judgement{DoesNotHold, fmt.Sprintf("%s let the fleet admit %d where it allows %d", r.algorithm, r.effective, bound)}
		}
	}
	return Judgement{Holds, fmt.Sprintf("with the nodes' clocks in step; the buckets' %d is their own promise b + r·W, as in one process", m.burst+m.limit)}
}

func (m atomicFleet) Text() string {
	var parts []string
	for _, r := range m.rows {
		parts = append(parts, fmt.Sprintf("%s %d at %.3f round trips a decision", r.algorithm, r.effective, r.roundTrips))
	}
	return fmt.Sprintf("%d nodes sharing one store, one atomic script per decision, %d per minute (burst %d): the whole fleet's effective_limit — %s",
		m.nodes, m.limit, m.burst, strings.Join(parts, ", "))
}

func measureAtomicFleet(s *session) (Measurement, error) {
	rep, ev, err := s.report("run", "cluster-shared")
	if err != nil {
		return nil, err
	}
	m := atomicFleet{limit: rep.Policy.Limit, burst: rep.Policy.Burst}
	for _, x := range rep.Results {
		d := x.Distributed
		if d == nil || d.Placement != "shared" {
			continue
		}
		m.nodes = d.Nodes
		m.rows = append(m.rows, fleetRowFigures{x.Algorithm, d.EffectiveLimit, d.StoreRoundTrips})
		ev.cite(x.Algorithm, d.Variant, cellInt(x.Requests), cellInt(x.Admitted), cellInt(x.Rejected), cellInt(d.EffectiveLimit))
	}
	if len(m.rows) == 0 {
		return nil, fmt.Errorf("cluster-shared: no shared rows")
	}
	return m, nil
}

// localRouting is node-local limits of L/N under even and hash routing.
type localRouting struct {
	limit        int64
	nodes        int
	even, hashed int64   // effective_limit: round-robin, hash
	share        float64 // the hashed client's share of the limit
}

// evenSlack is how close L/N per node under even routing must come to L.
const evenSlack = 0.02

// Judge: holds when even routing adds up to L (within evenSlack) and hash routing leaves
// the client at most L/N (plus evenSlack); holds with a caveat when only the second shows;
// does not hold when hash routing does not hold the client under L.
func (m localRouting) Judge() Judgement {
	even := float64(m.even) >= (1-evenSlack)*float64(m.limit) && float64(m.even) <= (1+evenSlack)*float64(m.limit)
	perNode := float64(m.limit) / float64(m.nodes)
	uneven := float64(m.hashed) <= (1+evenSlack)*perNode
	switch {
	case even && uneven:
		return Judgement{Holds, ""}
	case uneven:
		return Judgement{HoldsWithCaveat, fmt.Sprintf("even routing gave %d, not %d", m.even, m.limit)}
	}
	return Judgement{DoesNotHold, fmt.Sprintf("hash routing let the client have %d, above L/N = %.0f", m.hashed, perNode)}
}

func (m localRouting) Text() string {
	return fmt.Sprintf("%d nodes, each limiting its share L/N = %d of %d per minute, one client far over the limit: round-robin spreads it evenly — the fleet admits %d in one window; "+
		"hash routing pins it to one node — %d (client share %.2f of the advertised limit)",
		m.nodes, m.limit/int64(m.nodes), m.limit, m.even, m.hashed, m.share)
}

func measureLocalRouting(s *session) (Measurement, error) {
	rep, ev, err := s.report("run", "cluster-local")
	if err != nil {
		return nil, err
	}
	even, err := fleetRow(rep, "ten-nodes-round-robin", algorithms.SlidingLogName)
	if err != nil {
		return nil, err
	}
	hashed, err := fleetRow(rep, "ten-nodes-hash", algorithms.SlidingLogName)
	if err != nil {
		return nil, err
	}
	for _, x := range []report.Result{even, hashed} {
		ev.cite(x.Algorithm, x.Distributed.Variant, cellInt(x.Requests), cellInt(x.Admitted), cellInt(x.Rejected), cellInt(x.Distributed.EffectiveLimit))
	}
	return localRouting{limit: rep.Policy.Limit, nodes: hashed.Distributed.Nodes, even: even.Distributed.EffectiveLimit,
		hashed: hashed.Distributed.EffectiveLimit, share: hashed.Distributed.ClientShareMax}, nil
}

// scaleOut is node-local limits through a scale-out, recomputed or not.
type scaleOut struct {
	limit              int64
	from, to           int
	static, recomputed int64 // effective_limit
}

// Judge: holds when the static fleet reaches L × the new node count (within evenSlack)
// and the recomputed one stays at L; holds with a caveat when the static one only grows
// past L; does not hold when it does not.
func (m scaleOut) Judge() Judgement {
	want := float64(m.limit) * float64(m.to)
	switch {
	case float64(m.static) >= (1-evenSlack)*want && float64(m.static) <= (1+evenSlack)*want && m.recomputed <= m.limit:
		return Judgement{Holds, ""}
	case m.static > m.limit:
		return Judgement{HoldsWithCaveat, fmt.Sprintf("the fleet admitted %d, not %d × %d", m.static, m.to, m.limit)}
	}
	return Judgement{DoesNotHold, fmt.Sprintf("the fleet stayed at %d", m.static)}
}

func (m scaleOut) Text() string {
	return fmt.Sprintf("node-local limits of %d per minute, %d → %d nodes, one client far over the limit: not recomputed, the fleet admits %d in one trailing minute (%.2f× the limit); recomputed to L/N, %d",
		m.limit, m.from, m.to, m.static, float64(m.static)/float64(m.limit), m.recomputed)
}

func measureScaleOut(s *session) (Measurement, error) {
	rep, ev, err := s.report("run", "cluster-local")
	if err != nil {
		return nil, err
	}
	static, err := fleetRow(rep, "scale-out-static", algorithms.SlidingLogName)
	if err != nil {
		return nil, err
	}
	recomputed, err := fleetRow(rep, "scale-out-recomputed", algorithms.SlidingLogName)
	if err != nil {
		return nil, err
	}
	for _, x := range []report.Result{static, recomputed} {
		ev.cite(x.Algorithm, x.Distributed.Variant, cellInt(x.Requests), cellInt(x.Admitted), cellInt(x.Rejected), cellInt(x.Distributed.EffectiveLimit))
	}
	return scaleOut{limit: rep.Policy.Limit, from: static.Distributed.Nodes, to: static.Distributed.NodesMax,
		static: static.Distributed.EffectiveLimit, recomputed: recomputed.Distributed.EffectiveLimit}, nil
}

// twoTier is the two-tier placement against the shared script alone, per algorithm.
type twoTier struct {
	limit int64
	guard int64
	skew  time.Duration // the scenario's node clock skew, ±
	rows  []tierPair
}

type tierPair struct {
	algorithm                string
	tierTrips, sharedTrips   float64
	tierEffective, sharedEff int64
}

// tierTrips is the share of the shared script's round trips two tiers may keep to count as
// "far fewer": half.
const tierTrips = 0.5

// Judge per algorithm: two tiers keep at most tierTrips of the round trips and admit no
// more than the shared script alone (within raceSlack). All: holds, or holds with a caveat
// when even the shared script goes above L (clock skew); otherwise does not hold.
func (m twoTier) Judge() Judgement {
	above := false
	for _, r := range m.rows {
		if r.tierTrips > tierTrips*r.sharedTrips || float64(r.tierEffective) > (1+raceSlack)*float64(r.sharedEff) {
			return Judgement{DoesNotHold, fmt.Sprintf("%s: %.3f round trips and %d admitted, against %.3f and %d for the shared script alone",
				r.algorithm, r.tierTrips, r.tierEffective, r.sharedTrips, r.sharedEff)}
		}
		bound := m.limit
		if algorithms.IsBucket(r.algorithm) {
			bound = 2 * m.limit
		}
		above = above || r.sharedEff > bound
	}
	if above {
		if m.skew > 0 {
			return Judgement{HoldsWithCaveat, fmt.Sprintf("with the nodes' clocks skewed by up to ±%s, neither keeps the advertised limit exactly", m.skew)}
		}
		return Judgement{HoldsWithCaveat, "neither keeps the advertised limit exactly"}
	}
	return Judgement{Holds, ""}
}

func (m twoTier) Text() string {
	var parts []string
	for _, r := range m.rows {
		parts = append(parts, fmt.Sprintf("%s — two tiers %.3f round trips a decision, effective %d; shared script alone %.3f, %d", r.algorithm, r.tierTrips, r.tierEffective, r.sharedTrips, r.sharedEff))
	}
	return fmt.Sprintf("a node-local guard of %d per minute per key before the shared script, %d per minute advertised: %s", m.guard, m.limit, strings.Join(parts, "; "))
}

func measureTwoTier(s *session) (Measurement, error) {
	rep, ev, err := s.report("run", "cluster-two-tier")
	if err != nil {
		return nil, err
	}
	m := twoTier{limit: rep.Policy.Limit}
	sc, err := scenario.Load("cluster-two-tier")
	if err != nil {
		return nil, err
	}
	for _, f := range sc.Faults {
		if sk, ok := f.Spec.(*scenario.SkewSpec); ok {
			m.skew = time.Duration(sk.Max)
		}
	}
	// Each two-tier row against the shared script alone for the same algorithm.
	for _, x := range rep.Results {
		d := x.Distributed
		if d == nil || d.Placement != "two-tier" {
			continue
		}
		i := slices.IndexFunc(rep.Results, func(y report.Result) bool {
			return y.Distributed != nil && y.Distributed.Placement == "shared" && y.Algorithm == x.Algorithm
		})
		if i < 0 {
			return nil, fmt.Errorf("cluster-two-tier: no shared row for %s", x.Algorithm)
		}
		y := rep.Results[i]
		m.guard = d.GuardLimit
		m.rows = append(m.rows, tierPair{algorithm: x.Algorithm, tierTrips: d.StoreRoundTrips, tierEffective: d.EffectiveLimit,
			sharedTrips: y.Distributed.StoreRoundTrips, sharedEff: y.Distributed.EffectiveLimit})
		for _, z := range []report.Result{x, y} {
			ev.cite(z.Algorithm, z.Distributed.Variant, cellInt(z.Requests), cellInt(z.Admitted), cellInt(z.Rejected), cellInt(z.Distributed.EffectiveLimit), cellRatio(z.OverAdmission))
		}
	}
	if len(m.rows) == 0 {
		return nil, fmt.Errorf("cluster-two-tier: no two-tier rows")
	}
	return m, nil
}

// leasing is token leasing at several lease sizes.
type leasing struct {
	limit, burst int64
	leases       []leaseRow
}

type leaseRow struct {
	variant    string
	lease      int64
	roundTrips float64
	effective  int64
}

// The thresholds of "a little accuracy for far fewer round trips": at most leaseTrips
// round trips a decision and at most leaseSlack above the limit; a lease that leaves the
// client below leaseStarved of the limit has starved it.
const (
	leaseTrips   = 0.25
	leaseSlack   = 0.10
	leaseStarved = 0.8
)

// Judge: holds when some lease size keeps to leaseTrips round trips and stays between
// leaseStarved and 1 + leaseSlack of the limit, and none starves; holds with a caveat when
// some size does but another starves; does not hold when none does.
func (m leasing) Judge() Judgement {
	good := slices.ContainsFunc(m.leases, func(l leaseRow) bool {
		return l.roundTrips <= leaseTrips && float64(l.effective) <= (1+leaseSlack)*float64(m.limit) && float64(l.effective) >= leaseStarved*float64(m.limit)
	})
	var starved []string
	for _, l := range m.leases {
		if float64(l.effective) < leaseStarved*float64(m.limit) {
			starved = append(starved, fmt.Sprintf("a lease of %d (more than the central burst of %d) starves the client at %d", l.lease, m.burst, l.effective))
		}
	}
	switch {
	case good && len(starved) == 0:
		return Judgement{Holds, ""}
	case good:
		return Judgement{HoldsWithCaveat, strings.Join(starved, "; ")}
	}
	return Judgement{DoesNotHold, "no lease size kept both the round trips and the limit"}
}

func (m leasing) Text() string {
	var parts []string
	for _, l := range m.leases {
		parts = append(parts, fmt.Sprintf("lease %d: %.3f round trips a decision, effective %d", l.lease, l.roundTrips, l.effective))
	}
	return fmt.Sprintf("nodes borrow tokens from a central bucket of %d per minute (burst %d): %s; one script per decision is 1 round trip", m.limit, m.burst, strings.Join(parts, "; "))
}

func measureLeasing(s *session) (Measurement, error) {
	rep, ev, err := s.report("run", "cluster-leased")
	if err != nil {
		return nil, err
	}
	sc, err := scenario.Load("cluster-leased")
	if err != nil {
		return nil, err
	}
	m := leasing{limit: rep.Policy.Limit, burst: rep.Policy.Burst}
	for _, x := range rep.Results {
		d := x.Distributed
		if d == nil || d.Placement != "leased" {
			continue
		}
		l := leaseRow{variant: d.Variant, roundTrips: d.StoreRoundTrips, effective: d.EffectiveLimit, lease: sc.Cluster.Lease}
		for _, v := range sc.Cluster.Variants {
			if v.Name == d.Variant && v.Lease != nil {
				l.lease = *v.Lease
			}
		}
		m.leases = append(m.leases, l)
		ev.cite(x.Algorithm, d.Variant, cellInt(x.Requests), cellInt(x.Admitted), cellInt(x.Rejected), cellInt(d.EffectiveLimit), cellRatio(x.OverAdmission), cellFixed(d.StoreRoundTrips, 3))
	}
	if len(m.leases) == 0 {
		return nil, fmt.Errorf("cluster-leased: no leased rows")
	}
	return m, nil
}

// outage is what each outage policy did while the store was down.
type outage struct {
	limit int64
	nodes int
	rows  map[string]outageRow
}

type outageRow struct {
	admitted, refused int64 // decisions while the store was down
	effective         int64
	nodePeak, guard   int64
	alerts            int
	alert             string
}

// Judge: fail-closed must refuse everything, fail-open admit everything past the limit,
// fail-open-local keep each node under its guard and raise an alert. All three: holds, or
// holds with a caveat when the guards together let the fleet past L; otherwise does not hold.
func (m outage) Judge() Judgement {
	closed, open, local := m.rows["fail-closed"], m.rows["fail-open"], m.rows["fail-open-local"]
	var broken []string
	if !(closed.admitted == 0 && closed.refused > 0) {
		broken = append(broken, fmt.Sprintf("fail-closed admitted %d", closed.admitted))
	}
	if !(open.refused == 0 && open.effective > m.limit) {
		broken = append(broken, fmt.Sprintf("fail-open refused %d and admitted %d in a window", open.refused, open.effective))
	}
	if !(local.admitted > 0 && local.guard > 0 && local.nodePeak <= local.guard && local.alerts > 0) {
		broken = append(broken, fmt.Sprintf("fail-open-local: a node admitted %d against its guard of %d, %d alerts", local.nodePeak, local.guard, local.alerts))
	}
	switch {
	case len(broken) > 0:
		return Judgement{DoesNotHold, strings.Join(broken, "; ")}
	case local.effective > m.limit:
		return Judgement{HoldsWithCaveat, fmt.Sprintf("the guards protect each node, not the limit: the %d nodes together admit %d, %.2f× it", m.nodes, local.effective, float64(local.effective)/float64(m.limit))}
	}
	return Judgement{Holds, ""}
}

func (m outage) Text() string {
	closed, open, local := m.rows["fail-closed"], m.rows["fail-open"], m.rows["fail-open-local"]
	return fmt.Sprintf("%d nodes, the store down for a minute, %d per minute: fail-closed refuses all %d requests of the outage; fail-open admits all %d, effective_limit %d (%.0f×); "+
		"fail-open-local admits %d and refuses %d, no node above its guard of %d (most %d), effective %d, and raises the alert %q",
		m.nodes, m.limit, closed.refused, open.admitted, open.effective, float64(open.effective)/float64(m.limit),
		local.admitted, local.refused, local.guard, local.nodePeak, local.effective, local.alert)
}

func measureOutage(s *session) (Measurement, error) {
	rep, ev, err := s.report("run", "cluster-outage")
	if err != nil {
		return nil, err
	}
	m := outage{limit: rep.Policy.Limit, rows: map[string]outageRow{}}
	for _, x := range rep.Results {
		d := x.Distributed
		if d == nil {
			continue
		}
		m.nodes = d.Nodes
		m.rows[d.Variant] = outageRow{admitted: d.OutageAdmitted, refused: d.OutageRefused, effective: d.EffectiveLimit,
			nodePeak: d.OutageNodePeak, guard: d.GuardLimit, alerts: d.Alerts, alert: d.Alert}
		ev.cite(x.Algorithm, d.Variant, cellInt(d.EffectiveLimit), cellRatio(x.OverAdmission), cellInt(d.OutageAdmitted), cellInt(d.OutageRefused), cellInt(d.OutageNodePeak))
	}
	for _, v := range []string{"fail-closed", "fail-open", "fail-open-local"} {
		if _, ok := m.rows[v]; !ok {
			return nil, fmt.Errorf("cluster-outage: no %s variant", v)
		}
	}
	return m, nil
}

// clusterSlots is whether the notes' two-counter script's keys, named as the notes name
// them, share a Redis Cluster hash slot call after call, against the same keys with the
// client key as their hash tag.
type clusterSlots struct {
	client      string
	calls       int
	untagged    int // calls whose two untagged keys share a slot
	tagged      int // the same with the hash tag (rlsim's sliding-window)
	first       []string
	firstSlots  []int
	taggedFirst []string
}

// untaggedRunShare is the share of calls an untagged pair may keep in one slot and the
// claim still hold: below it a cluster refuses practically every call.
const untaggedRunShare = 0.01

// Judge: holds when the untagged names put at most untaggedRunShare of the calls in one
// slot and the tagged ones every call; does not hold when the untagged names keep nearly
// every call in one slot (no tag needed); holds with a caveat in between, or when even
// the tagged names part.
func (m clusterSlots) Judge() Judgement {
	share := float64(m.untagged) / float64(m.calls)
	switch {
	case share >= 1-untaggedRunShare:
		return Judgement{DoesNotHold, fmt.Sprintf("the untagged names share a slot in %d of %d calls: a cluster runs them as written", m.untagged, m.calls)}
	case m.tagged < m.calls:
		return Judgement{HoldsWithCaveat, fmt.Sprintf("even with the hash tag %d of %d calls span slots", m.calls-m.tagged, m.calls)}
	case share > untaggedRunShare:
		return Judgement{HoldsWithCaveat, fmt.Sprintf("without a tag %s of the calls still run, their two keys falling in one slot by chance", pct(share))}
	}
	return Judgement{Holds, "on Redis Cluster; a single Redis server runs the script as written"}
}

func (m clusterSlots) Text() string {
	return fmt.Sprintf("the previous and the current window's counters named as the notes name keys (rl:%s: and the window's start in seconds, as in their INCR example): %d of %d consecutive windows' pairs share a Redis Cluster hash slot (the first: %s in slot %d, %s in slot %d), and a cluster answers CROSSSLOT to every call whose keys do not; with the client key as the keys' hash tag (%s, rlsim's scripts) %d of %d do",
		m.client, m.untagged, m.calls, m.first[0], m.firstSlots[0], m.first[1], m.firstSlots[1], strings.Join(m.taggedFirst, " and "), m.tagged, m.calls)
}

func measureClusterSlots(s *session) (Measurement, error) {
	var rep struct {
		Key     string `json:"key"`
		Results []struct {
			Script         string   `json:"script"`
			Naming         string   `json:"naming"`
			KeysPerCall    int      `json:"keys_per_call"`
			Calls          int      `json:"calls"`
			CallsInOneSlot int      `json:"calls_in_one_slot"`
			FirstKeys      []string `json:"first_keys"`
			FirstSlots     []int    `json:"first_slots"`
		} `json:"results"`
	}
	ev, err := s.decode(&rep, "slots", "--key", "user_8812", "--calls", "10000")
	if err != nil {
		return nil, err
	}
	m := clusterSlots{client: rep.Key}
	found := 0
	for _, r := range rep.Results {
		switch {
		case r.Script == "notes-sliding-window" && len(r.FirstKeys) == 2:
			m.calls, m.untagged, m.first, m.firstSlots = r.Calls, r.CallsInOneSlot, r.FirstKeys, r.FirstSlots
			ev.cite("notes-sliding-window", "2", cellInt(int64(r.Calls)), cellInt(int64(r.CallsInOneSlot)))
			found++
		case r.Script == "sliding-window":
			m.tagged, m.taggedFirst = r.CallsInOneSlot, r.FirstKeys
			ev.cite("rl:{<client>}:sw:", "2", cellInt(int64(r.Calls)), cellInt(int64(r.CallsInOneSlot)))
			found++
		}
	}
	if found != 2 || m.calls == 0 {
		return nil, fmt.Errorf("%s: no rows for the notes' names and rlsim's sliding-window", ev)
	}
	return m, nil
}
