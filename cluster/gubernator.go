package cluster

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/sim"
)

// GubernatorAlgorithms are the algorithms the global-sync placement runs with the owner
// target, as Gubernator implements them (algorithms.go): token-bucket is its TOKEN_BUCKET
// — in fact a fixed window that opens at a key's first hit, not a bucket that refills —
// and leaky-bucket its LEAKY_BUCKET.
var GubernatorAlgorithms = []string{algorithms.TokenBucketName, algorithms.LeakyBucketName}

// Behaviors are the Gubernator request behaviours a fleet may set (Config.Behaviors):
// DRAIN_OVER_LIMIT empties a key whose request asked for more than it has left. GLOBAL is
// the global-sync placement itself, and BATCHING / NO_BATCHING the owner placement's
// forward (batched, direct).
var Behaviors = []string{"DRAIN_OVER_LIMIT"}

// DefaultSync is a global-sync fleet's sync interval when the scenario names none:
// Gubernator's GlobalSyncWait default from v2.2.0 to gubernator-io v2.19.1, 100 ms
// (config.go; v2.0.0 had 500 µs, v2.1 500 ms). Kong's sync_rate defaults to -1,
// synchronous: sync 0s.
const DefaultSync = 100 * time.Millisecond

// DefaultGlobalBatchLimit is GlobalBatchLimit's default (maxBatchSize, config.go): a
// node sends its queued hits, or an owner its broadcast, at once when this many keys are
// queued.
const DefaultGlobalBatchLimit = 1000

// gubernator is the global-sync placement with the owner target: Gubernator's GLOBAL
// behaviour as gubernator-io v2.19.1 runs it (gubernator.go, global.go, algorithms.go;
// the same since mailgun v2.4.0, PR #219):
//
//   - Every node keeps one cache of items, one per key. The key's owner on the
//     consistent-hash ring (ring.go) holds the item that counts; every other node holds
//     its own copy, made by its first request for the key, overwritten by the owner's
//     broadcasts.
//   - A request reaching the owner is decided on the owner's item and queues an update
//     for broadcast. A request reaching any other node is decided on that node's copy
//     "like we own it", answered at once, and queued as a hit for the owner — every
//     request, admitted or refused.
//   - Each node sums its queued hits per key and sends them to their owners
//     GlobalSyncWait (Sync) after the first was queued, or at once when GlobalBatchLimit
//     keys are queued; the owner applies each key's sum with DRAIN_OVER_LIMIT forced
//     (GetPeerRateLimits), half a round trip later, and queues an update.
//   - Each owner, GlobalSyncWait after its first queued update (or at the batch limit),
//     reads each updated key's status (a hit of 0) and sends it to every other node,
//     which replaces its copy with it half a round trip later.
//
// A node's copy is so up to about two sync waits and a round trip behind the owner, and
// between broadcasts it counts its own requests only: the others' are invisible to it.
// See the over-admission formula in globalsync.go.
//
// Sync 0 turns GLOBAL off: every request is decided on the owner's item, one peer hop
// away for the nodes that do not own its key (Gubernator's default, non-GLOBAL path).
//
// Membership changes move keys on the ring: a key's new owner decides from whatever item
// it holds for it — its own copy, or nothing — as Gubernator's cache does; nodes taken out
// of service lose their caches and queues. A partition (Outage.Nodes) makes a send or a
// broadcast to or from a cut-off node fail: Gubernator logs the error and drops those hits
// and updates, so a cut-off node decides from its copy alone, and what it admitted never
// reaches the owner.
type gubernator struct {
	ring          *ring
	sync          int64 // ns: GlobalSyncWait
	rtt           int64 // ns: the round trip between two nodes
	batchLimit    int
	drain         bool // the clients' requests carry DRAIN_OVER_LIMIT
	leaky         bool
	limit, burst  int64
	duration      int64 // ms
	nodes         []*gNode
	events        sim.Queue[gEvent]
	seq           uint64
	sends, fails  int64 // hit sends and broadcast messages; those a partition stopped
	hops, decided int64
}

// gItem is one cache item: a TOKEN_BUCKET (a fixed window) or a LEAKY_BUCKET.
type gItem struct {
	expireAt int64 // ms: alive while ExpireAt ≥ now
	// TOKEN_BUCKET
	over      bool // the item's Status is OVER_LIMIT
	remaining int64
	// LEAKY_BUCKET
	leakRemaining float64
	burst         int64
	updatedAt     int64 // ms
}

// gStatus is an algorithm's answer (RateLimitResp).
type gStatus struct {
	over      bool
	remaining int64
	reset     int64 // ms
}

// gNode is one node's cache, its queued hits (to the owners) and its queued updates (to
// broadcast, for the keys it owns).
type gNode struct {
	cache         []*gItem // by key
	hits          []gHit   // one per key, in the order first queued
	hitAt         []int    // by key: index in hits, +1 (0: none queued)
	updates       []gHit   // one per key (hits unused), in the order first queued
	updateAt      []int
	hitTimer      gInterval
	updateTimer   gInterval
	inService     bool
	hitN, updateN uint64 // generations of the timers, to drop a fire for a node replaced
}

// gHit is a queued request for one key: its hits summed and the first one's CreatedAt.
type gHit struct {
	key       uint32
	hits      int64
	createdAt int64 // ms
}

// gInterval is Gubernator's Interval, a one-shot ticker: Next starts a wait of the sync
// interval unless one is running; a Next during a wait queues one more wait after it (the
// ticker's channel holds one), and further ones are dropped.
type gInterval struct {
	running, queued bool
	until           int64 // ns
}

type gEventKind uint8

const (
	gHitTick    gEventKind = iota // a node's hits interval ends
	gUpdateTick                   // an owner's broadcast interval ends
	gHitsArrive                   // a node's hits reach an owner
	gCastArrive                   // an owner's broadcast reaches a node
)

type gEvent struct {
	kind   gEventKind
	node   int // where it happens
	gen    uint64
	hits   []gHit
	status []gCast
}

// gCast is one key's status in a broadcast.
type gCast struct {
	key    uint32
	status gStatus
}

func newGubernator(c Config, algorithm string, p algorithms.Policy) (*gubernator, error) {
	if !slices.Contains(GubernatorAlgorithms, algorithm) {
		return nil, fmt.Errorf("placement global-sync to owners: Gubernator has no %q (want one of %s)", algorithm, strings.Join(GubernatorAlgorithms, ", "))
	}
	if p.Window < time.Millisecond {
		return nil, fmt.Errorf("placement global-sync to owners: Gubernator counts in milliseconds; the window %s is shorter", p.Window)
	}
	g := &gubernator{
		ring: newRing(c.VNodes), sync: int64(c.Sync), rtt: int64(c.PeerLatency), batchLimit: c.GlobalBatchLimit,
		drain: slices.Contains(c.Behaviors, "DRAIN_OVER_LIMIT"), leaky: algorithm == algorithms.LeakyBucketName,
		limit: p.Limit, burst: p.EffectiveBurst(), duration: p.Window.Milliseconds(),
	}
	if g.batchLimit == 0 {
		g.batchLimit = DefaultGlobalBatchLimit
	}
	return g, nil
}

// resize puts nodes 0..n-1 in service: the nodes that leave lose their caches and
// queues; the nodes that join start empty.
func (g *gubernator) resize(_ *Fleet, _, n int) {
	for len(g.nodes) < n {
		g.nodes = append(g.nodes, &gNode{})
	}
	for i, nd := range g.nodes {
		switch {
		case i >= n && nd.inService:
			g.nodes[i] = &gNode{hitN: nd.hitN + 1, updateN: nd.updateN + 1}
		case i < n:
			g.nodes[i].inService = true
		}
	}
	g.ring.resize(n)
}

func (g *gubernator) push(at int64, e gEvent) {
	g.seq++
	g.events.Push(sim.Item[gEvent]{At: time.Duration(at), Seq: g.seq, Value: e})
}

// next starts iv's wait at now (Interval.Next), scheduling its end.
func (g *gubernator) next(iv *gInterval, now int64, kind gEventKind, node int, gen uint64) {
	switch {
	case !iv.running:
		iv.running, iv.until = true, now+g.sync
		g.push(iv.until, gEvent{kind: kind, node: node, gen: gen})
	case !iv.queued:
		iv.queued = true
	}
}

// tick ends iv's wait: the queued one, if any, starts now.
func (g *gubernator) tick(iv *gInterval, kind gEventKind, node int, gen uint64) {
	if iv.queued {
		iv.queued, iv.until = false, iv.until+g.sync
		g.push(iv.until, gEvent{kind: kind, node: node, gen: gen})
		return
	}
	iv.running = false
}

// gMS is node's clock at true time at (ns since the Unix epoch), in milliseconds, as
// Gubernator stamps CreatedAt.
func (f *Fleet) gMS(node int, at int64) int64 {
	return floorDiv(at+f.nodes[node].skew, int64(time.Millisecond))
}

// get returns node nd's item for key alive at nowMS, or nil (an expired item is removed,
// as the cache's GetItem does).
func (nd *gNode) get(key uint32, nowMS int64) *gItem {
	if int(key) >= len(nd.cache) {
		return nil
	}
	it := nd.cache[key]
	if it != nil && it.expireAt < nowMS {
		nd.cache[key] = nil
		return nil
	}
	return it
}

func (nd *gNode) set(key uint32, it *gItem) {
	for int(key) >= len(nd.cache) {
		nd.cache = append(nd.cache, nil)
	}
	nd.cache[key] = it
}

// apply runs the algorithm on node nd's item for key: hits at createdAt (ms), the cache
// read at nowMS (ms, the node's clock), draining an over-limit request's key if drain.
func (g *gubernator) apply(nd *gNode, key uint32, hits, createdAt, nowMS int64, drain bool) gStatus {
	if g.leaky {
		return g.leakyBucket(nd, key, hits, createdAt, nowMS, drain)
	}
	return g.tokenBucket(nd, key, hits, createdAt, nowMS, drain)
}

// tokenBucket is Gubernator's TOKEN_BUCKET (tokenBucket, tokenBucketNewItem): a window of
// Limit hits that opens at the first hit and ends Duration later; a request for more
// than is left is refused without taking anything unless drain empties the window.
func (g *gubernator) tokenBucket(nd *gNode, key uint32, hits, createdAt, nowMS int64, drain bool) gStatus {
	if it := nd.get(key, nowMS); it != nil {
		rl := gStatus{over: it.over, remaining: it.remaining, reset: it.expireAt}
		switch {
		case hits == 0:
		case rl.remaining == 0:
			rl.over, it.over = true, true
		case it.remaining == hits:
			it.remaining, rl.remaining = 0, 0
		case hits > it.remaining:
			rl.over = true
			if drain {
				it.remaining, rl.remaining = 0, 0
			}
		default:
			it.remaining -= hits
			rl.remaining = it.remaining
		}
		return rl
	}
	it := &gItem{remaining: g.limit - hits, expireAt: createdAt + g.duration}
	rl := gStatus{remaining: it.remaining, reset: it.expireAt}
	if hits > g.limit {
		// The new-item path ignores DRAIN_OVER_LIMIT, even with it forced.
		rl.over, rl.remaining, it.remaining = true, g.limit, g.limit
	}
	nd.set(key, it)
	return rl
}

// leakyBucket is Gubernator's LEAKY_BUCKET (leakyBucket, leakyBucketNewItem): Remaining
// leaks back at Limit per Duration, in whole-hit steps of the elapsed milliseconds, up to
// Burst.
func (g *gubernator) leakyBucket(nd *gNode, key uint32, hits, createdAt, nowMS int64, drain bool) gStatus {
	rate := float64(g.duration) / float64(g.limit) // ms per hit
	if it := nd.get(key, nowMS); it != nil {
		if it.burst != g.burst {
			// A copy from a broadcast carries Burst = Limit; a request with another burst
			// refills it to its own.
			if g.burst > int64(it.leakRemaining) {
				it.leakRemaining = float64(g.burst)
			}
			it.burst = g.burst
		}
		if hits != 0 {
			it.expireAt = createdAt + g.duration
		}
		if leak := float64(createdAt-it.updatedAt) / rate; int64(leak) > 0 {
			it.leakRemaining += leak
			it.updatedAt = createdAt
		}
		if int64(it.leakRemaining) > it.burst {
			it.leakRemaining = float64(it.burst)
		}
		left := int64(it.leakRemaining)
		rl := gStatus{remaining: left, reset: createdAt + (g.limit-left)*int64(rate)}
		switch {
		case left == 0 && hits > 0:
			rl.over = true
		case left == hits:
			it.leakRemaining, rl.remaining = 0, 0
			rl.reset = createdAt + g.limit*int64(rate)
		case hits > left:
			rl.over = true
			if drain {
				it.leakRemaining, rl.remaining = 0, 0
			}
		case hits == 0:
		default:
			it.leakRemaining -= float64(hits)
			rl.remaining = int64(it.leakRemaining)
			rl.reset = createdAt + (g.limit-rl.remaining)*int64(rate)
		}
		return rl
	}
	it := &gItem{leakRemaining: float64(g.burst - hits), burst: g.burst, updatedAt: createdAt, expireAt: createdAt + g.duration}
	rl := gStatus{remaining: g.burst - hits, reset: createdAt + (g.limit-(g.burst-hits))*int64(rate)}
	if hits > g.burst {
		rl.over, rl.remaining, it.leakRemaining = true, 0, 0
		rl.reset = createdAt + g.limit*int64(rate)
	}
	nd.set(key, it)
	return rl
}

// adopt is a node's UpdatePeerGlobals: its copy of key becomes the owner's status, made
// at nowMS on the node's clock.
func (g *gubernator) adopt(nd *gNode, key uint32, s gStatus, nowMS int64) {
	it := &gItem{expireAt: s.reset, over: s.over, remaining: s.remaining}
	if g.leaky {
		it = &gItem{expireAt: s.reset, leakRemaining: float64(s.remaining), burst: g.limit, updatedAt: nowMS}
	}
	nd.set(key, it)
}

// queue adds hits for key at createdAt to list (by key index at), returning whether the
// list was empty before. A key queued already sums its hits and keeps its first
// CreatedAt (runAsyncHits), or with latest takes the newest (runBroadcasts keeps the last
// update of a key).
func queue(list *[]gHit, at *[]int, key uint32, hits, createdAt int64, latest bool) (first bool) {
	for int(key) >= len(*at) {
		*at = append(*at, 0)
	}
	first = len(*list) == 0
	if i := (*at)[key]; i > 0 {
		(*list)[i-1].hits += hits
		if latest {
			(*list)[i-1].createdAt = createdAt
		}
		return first
	}
	*list = append(*list, gHit{key: key, hits: hits, createdAt: createdAt})
	(*at)[key] = len(*list)
	return first
}

// take empties a queue, returning what it held.
func take(list *[]gHit, at []int) []gHit {
	out := *list
	for _, h := range out {
		at[h.key] = 0
	}
	*list = nil
	return out
}

// queueHit is QueueHit on node n: at the batch limit the hits leave at once.
func (f *Fleet) queueHit(n int, key uint32, hits, createdAt, now int64) {
	g, nd := f.place.(*gubernator), f.place.(*gubernator).nodes[n]
	if queue(&nd.hits, &nd.hitAt, key, hits, createdAt, false) {
		g.next(&nd.hitTimer, now, gHitTick, n, nd.hitN)
	}
	if len(nd.hits) >= g.batchLimit {
		f.sendHits(n, now)
	}
}

// queueUpdate is QueueUpdate on owner n.
func (f *Fleet) queueUpdate(n int, key uint32, createdAt, now int64) {
	g, nd := f.place.(*gubernator), f.place.(*gubernator).nodes[n]
	if queue(&nd.updates, &nd.updateAt, key, 0, createdAt, true) {
		g.next(&nd.updateTimer, now, gUpdateTick, n, nd.updateN)
	}
	if len(nd.updates) >= g.batchLimit {
		f.broadcast(n, now)
	}
}

// peerCut reports whether a message between nodes a and b fails at now: either is cut
// off from its peers.
func (f *Fleet) peerCut(a, b int, now int64) bool {
	elapsed := time.Duration(now - f.cfg.Epoch)
	_, oa := f.outageFor(a, elapsed, CutPeers)
	_, ob := f.outageFor(b, elapsed, CutPeers)
	return oa != nil || ob != nil
}

// sendHits is sendHits on node n at now: one request to each owner with its keys' hits.
func (f *Fleet) sendHits(n int, now int64) {
	g := f.place.(*gubernator)
	byOwner := map[int][]gHit{}
	var owners []int
	for _, h := range take(&g.nodes[n].hits, g.nodes[n].hitAt) {
		o := g.ring.owner(f.names[h.key])
		if byOwner[o] == nil {
			owners = append(owners, o)
		}
		byOwner[o] = append(byOwner[o], h)
	}
	slices.Sort(owners)
	for _, o := range owners {
		g.sends++
		if f.peerCut(n, o, now) {
			g.fails++ // lost: Gubernator does not send them again
			continue
		}
		g.push(now+g.rtt/2, gEvent{kind: gHitsArrive, node: o, gen: g.nodes[o].hitN, hits: byOwner[o]})
	}
}

// broadcast is broadcastPeers on owner n at now: each updated key's status, read with a
// hit of 0 at its update's CreatedAt, to every other node in service.
func (f *Fleet) broadcast(n int, now int64) {
	g, nd := f.place.(*gubernator), f.place.(*gubernator).nodes[n]
	var casts []gCast
	for _, u := range take(&nd.updates, nd.updateAt) {
		casts = append(casts, gCast{key: u.key, status: g.apply(nd, u.key, 0, u.createdAt, f.gMS(n, now), false)})
	}
	for p := range g.ring.nodes {
		if p == n {
			continue
		}
		g.sends++
		if f.peerCut(n, p, now) {
			g.fails++
			continue
		}
		g.push(now+g.rtt/2, gEvent{kind: gCastArrive, node: p, gen: g.nodes[p].updateN, status: casts})
	}
}

// advanceGubernator runs, in time order, every timer and message due at or before now.
func (f *Fleet) advanceGubernator(now int64) {
	g := f.place.(*gubernator)
	for g.events.Len() > 0 && int64(g.events.Min().At) <= now {
		it := g.events.Pop()
		at, e := int64(it.At), it.Value
		if e.node >= len(g.nodes) || !g.nodes[e.node].inService {
			continue // the node left service: its timers and what was sent to it are lost
		}
		nd := g.nodes[e.node]
		switch e.kind {
		case gHitTick:
			if e.gen != nd.hitN {
				continue
			}
			g.tick(&nd.hitTimer, gHitTick, e.node, nd.hitN)
			if len(nd.hits) > 0 {
				f.sendHits(e.node, at)
			}
		case gUpdateTick:
			if e.gen != nd.updateN {
				continue
			}
			g.tick(&nd.updateTimer, gUpdateTick, e.node, nd.updateN)
			if len(nd.updates) > 0 {
				f.broadcast(e.node, at)
			}
		case gHitsArrive:
			if e.gen != nd.hitN {
				continue
			}
			for _, h := range e.hits {
				// GetPeerRateLimits forces DRAIN_OVER_LIMIT on GLOBAL hits.
				g.apply(nd, h.key, h.hits, h.createdAt, f.gMS(e.node, at), true)
				f.queueUpdate(e.node, h.key, h.createdAt, at)
			}
		case gCastArrive:
			if e.gen != nd.updateN {
				continue
			}
			for _, c := range e.status {
				g.adopt(nd, c.key, c.status, f.gMS(e.node, at))
			}
		}
	}
}

// decide takes t's decision under global-sync to owners.
func (g *gubernator) decide(f *Fleet, t *ticket, _ *Outage) {
	f.advanceGubernator(t.now)
	g.decided++
	owner := g.ring.owner(f.names[t.key])
	if g.sync == 0 && owner != t.node {
		// GLOBAL off: the request is forwarded to the owner, one hop.
		if f.peerCut(t.node, owner, t.now) {
			t.inOutage = true
			t.wait = f.cfg.StoreTimeout
			elapsed := time.Duration(t.now - f.cfg.Epoch)
			_, o := f.outageFor(t.node, elapsed, CutPeers)
			if o == nil {
				_, o = f.outageFor(owner, elapsed, CutPeers)
			}
			t.d = f.failover(o, t.nd, t.key, t.nodeNow, t.cost, false)
			return
		}
		g.hops++
		t.peer = time.Duration(g.rtt)
		at := t.now + g.rtt/2
		ms := f.gMS(owner, at)
		t.d = g.decision(g.apply(g.nodes[owner], t.key, t.cost, ms, ms, g.drain), ms)
		return
	}
	nd := g.nodes[t.node]
	ms := f.gMS(t.node, t.now)
	t.d = g.decision(g.apply(nd, t.key, t.cost, ms, ms, g.drain), ms)
	if g.sync == 0 {
		return
	}
	if owner == t.node {
		f.queueUpdate(t.node, t.key, ms, t.now)
		return
	}
	_, cut := f.outageFor(t.node, time.Duration(t.now-f.cfg.Epoch), CutPeers)
	t.inOutage = cut != nil
	f.queueHit(t.node, t.key, t.cost, ms, t.now)
}

// decision is an answer as rlsim's limiters give it, at nowMS.
func (g *gubernator) decision(s gStatus, nowMS int64) algorithms.Decision {
	d := algorithms.Decision{Allowed: !s.over, Remaining: s.remaining}
	if wait := time.Duration(s.reset-nowMS) * time.Millisecond; wait > 0 {
		d.Reset = wait
		if s.over {
			d.RetryAfter = wait
		}
	}
	return d
}

// exchanges are the messages GLOBAL costs: hit sends to owners and broadcast messages.
func (g *gubernator) exchanges() int64 { return g.sends }

func (g *gubernator) figures(f *Fleet, d *DesignFigures) {
	d.Syncs, d.SyncFailures = g.exchanges(), g.fails
	if f.decided > 0 {
		d.PeerHops = float64(g.hops) / float64(f.decided)
		d.PeerMessages = float64(d.Syncs+g.hops) / float64(f.decided)
	}
	d.Sync, d.SyncTo = f.cfg.Sync, f.cfg.SyncTo
}

func (g *gubernator) alone() string {
	if g.sync > 0 {
		return "nodes decide alone, from their copies; the hits they send are lost"
	}
	return ""
}
