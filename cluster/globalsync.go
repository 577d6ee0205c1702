package cluster

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/sim"
	"github.com/rlsim/rlsim/store"
)

// The global-sync placement: each node decides from its view of the global count and
// exchanges its hits every Config.Sync with the key's owner (Gubernator's GLOBAL,
// gubernator.go) or with the store (Kong's sync_rate, globalSync below).
func init() {
	registerPlacement(PlacementKind{
		Name:  "global-sync",
		Doc:   "each node decides from its view of the global count and syncs its hits with the key's owner or the store every Sync",
		Rank:  80,
		Store: func(c *Config) bool { return c.SyncTo == syncToStore },
		Runs: func(c *Config, algs []string) []string {
			if c.SyncTo == syncToStore {
				return slices.DeleteFunc(slices.Clone(algs), func(a string) bool {
					return !slices.Contains(GlobalAlgorithms(), a) && !store.SharesCounters(a)
				})
			}
			return keep(algs, GubernatorAlgorithms)
		},
		Validate: func(c *Config) error {
			if c.SyncTo == syncToStore {
				if c.Sync > 0 && c.Sync < KongMinSync {
					return fieldError("sync", "%s is below the %s Kong accepts for sync_rate (0s is synchronous, its -1)", c.Sync, KongMinSync)
				}
				return nil
			}
			return checkRing(c)
		},
		New: func(f *Fleet, st store.Store) (placement, error) {
			if f.cfg.SyncTo == syncToStore {
				return newGlobalSync(f.cfg, f.algorithm, f.policy, st)
			}
			return newGubernator(f.cfg, f.algorithm, f.policy)
		},
		Owners: func(c *Config) bool { return c.SyncTo != syncToStore },
	})
}

// syncToStore is the SyncTargets entry that syncs with the store.
const syncToStore = "store"

var (
	_ figurer = (*globalSync)(nil)
	_ loner   = (*globalSync)(nil)
	_ resizer = (*gubernator)(nil)
	_ figurer = (*gubernator)(nil)
	_ loner   = (*gubernator)(nil)
)

func (g *globalSync) decide(f *Fleet, t *ticket, _ *Outage) { f.decideGlobal(t) }

func (g *globalSync) figures(f *Fleet, d *DesignFigures) {
	d.Syncs, d.SyncFailures = g.exchanges(), g.fails
	d.Sync, d.SyncTo, d.SyncsOnStore = f.cfg.Sync, f.cfg.SyncTo, true
}

func (g *globalSync) alone() string {
	if g.sync > 0 {
		return "nodes decide alone, from their last read of the counts and their own hits"
	}
	return ""
}

// GlobalAlgorithms lists the algorithms the global-sync placement runs with the store
// target: those with a store script whose state is window counts (one, or the current and
// previous), to which a node can add the hits it admitted and which it can read back as
// totals, and Kong's specs with policy=redis (store.SharesCounters; see globalSync). With the
// owner target it runs Gubernator's (GubernatorAlgorithms).
func GlobalAlgorithms() []string {
	return algorithms.Select(func(k *algorithms.Kind) bool {
		return k.Script != "" && (k.Form == algorithms.FormWindowCount || k.Form == algorithms.FormTwoWindowCounts)
	})
}

// SyncTargets are where global-sync nodes send their hits and read the totals from.
//
//	owner  the key's owner on the consistent-hash ring (ring.go), which keeps the key's
//	       item in its memory: no store (Gubernator's GLOBAL behaviour, gubernator.go)
//	store  the shared store: INCRBY the window counters, then read them (Kong's
//	       rate-limiting plugin, policy redis with sync_rate)
var SyncTargets = []string{"owner", syncToStore}

// KongMinSync is the shortest sync_rate Kong's rate-limiting plugin accepts (schema.lua,
// 3.4 and later: "sync_rate must be greater than 0.02, or -1 to disable"); -1 is
// synchronous, sync 0s here.
const KongMinSync = 20 * time.Millisecond

// globalSync is the global-sync placement with the store target, as Kong's rate-limiting
// plugin runs its redis policy with a sync_rate: every node decides from its own view of
// the key's window counts and exchanges hits and totals with the store periodically.
//
// Each node runs a timer of period Sync (node i's ticks offset by i·Sync/N, so the nodes
// do not tick in step). At each tick, for every key it has seen, it sends the hits it
// admitted since the last tick — the store adds them to the window counters half a round
// trip later — and reads the totals of the current and previous windows, which reach it
// a round trip after the tick. (Kong sends its admitted requests' delta with INCRBY and
// clears its cache, so that its next request reads the store: in a flood, a read just
// after each sync.) A node's view of a window's count is the total of its last read that
// has arrived, plus its own hits that total does not hold yet. Refused requests count
// nowhere: Kong undoes a refused request's delta.
//
// Over-admission. What node i does not see of node j's admissions at a moment is what j
// admitted since j's last send before i's last read: with the ticks offset by S/N, a
// span of S·k/N for the k-th node before i, plus the time since i's read. Averaged over
// the N−1 others and over i's interval, that is S·(N−1)/N of their admissions, or with
// the fleet admitting at rate r (r/N per node):
//
//	over-admission ≈ r · S · (N−1)/N, at most (N−1)·L
//
// beyond the limit L (every node alone still enforces L), in the window where the limit
// is reached (docs/distributed.md derives
// it and TestGlobalSyncOverAdmissionFormula holds runs to it). One node sees everything
// (N = 1: exact), and it is what Kong's documentation means by counters that are accurate
// only when sync_rate is 0.
//
// The model reads lazily: a node's read of a tick is taken at its next decision, from the
// target's counters then, less what the target applied after the read's moment (the
// fleet logs each increment it applies for the last interval), so the figures are those
// of the periodic reads without a store call per node and tick.
//
// What the exchanges cost the store: each node's timer makes one round trip a tick (a
// pipeline of every key's diff and read, as Kong's timer does), from the node's first
// request to its last.
//
// Sync 0 is synchronous (Kong's sync_rate -1): each decision reads the totals and adds
// its own hit at once, one round trip, which is exact.
//
// A node cut off by a partition (Outage.Nodes) can neither send nor read: it keeps its
// hits and goes on deciding from its last read and its own admissions — it enforces the
// whole limit alone — until the partition ends.
//
// Kong (a kong:… spec with policy=redis, kong set) keeps one counter per configured
// period and window, named by the period and the window's start, and a node's view holds
// each period's count as it does a window's: a request passes only if every period's
// count, with it, is within its limit, and an admitted one adds its cost to every
// period's pending hits, as the plugin's handler reads each period's usage and, on
// admission, increments every period (kong/plugins/rate-limiting/handler.lua and
// policies/init.lua, 3.9.1). The over-admission above holds for each period on its own,
// with L its limit. Sync 0 is Kong's sync_rate −1, in which the plugin's usage() INCRs
// every period's counter: each request, admitted or refused, counts on every period at
// once, one round trip per period, as on the shared placement (store.Counters).
type globalSync struct {
	rw      store.ReadWriter // the store's counters
	sync    int64            // ns
	rtt     int64            // ns: the round trip of an exchange
	nodes   int              // the node count at the start, for the timers' offsets
	limit   int64
	window  int64 // µs
	ttl     int64 // ms: the counters' TTL, for garbage collection only
	prefix  string
	sliding bool
	windows []syncCounter // the window counters (Kong's periods), shortest first; nil for the window algorithms
	tag     string        // the model's name, which its counters' names carry
	views   map[viewKey]*view
	applied map[string][]applied // per counter, the increments of the last interval
	events  sim.Queue[event]
	seq     uint64
	sends   int64 // sends that reached the store
	fails   int64 // sends a partition stopped
	// active is, per node, the first and last request it decided.
	active [][2]int64
}

type viewKey struct {
	node int
	key  uint32
}

// view is one node's view of one key's global counts.
type view struct {
	readTick    int64    // the tick of the read base holds (-1: none yet)
	readAt      int64    // ns: the moment the target read base
	baseIdx     int64    // the window index of base[1]; base[0] is the window before
	base        [2]int64 // the totals read
	counterIdx  []int64  // window counters: per counter, the window (its start, Unix s) counterBase holds
	counterBase []int64  // window counters: per counter, the total read
	sent        []hit    // hits sent, with the moment the target applies them
	pending     []hit    // admitted, not yet sent
	sendNext    bool     // a send is scheduled
	first       int64    // ns: the node's first request for the key
}

// hit is cost admitted in window idx (for Kong, of period, in kong's order), applied by
// the target at at.
type hit struct {
	idx, cost, at int64
	period        int
}

// syncCounter is one of Kong's periods as the global-sync nodes count it.
type syncCounter struct {
	algorithms.Counter
	ttl int64 // ms: its counters' TTL, the plugin's and the clocks' margin
}

type applied struct{ at, cost int64 }

type eventKind uint8

const (
	sendEvent  eventKind = iota // the node sends its pending hits
	applyEvent                  // the target applies hits
)

// event is a send or an apply due at at (ns); the queue orders events due at the same
// instant by when they were scheduled.
type event struct {
	at   int64
	kind eventKind
	vk   viewKey
	hits []hit
}

func newGlobalSync(c Config, algorithm string, p algorithms.Policy, st store.Store) (*globalSync, error) {
	periods, counted := algorithms.SharedCounters(algorithm)
	if !counted && !slices.Contains(GlobalAlgorithms(), algorithm) {
		return nil, fmt.Errorf("placement global-sync: no counter form of %q (want one of %s)", algorithm, strings.Join(GlobalAlgorithms(), ", "))
	}
	if err := store.CheckPolicy(p); err != nil {
		return nil, err
	}
	g := &globalSync{
		sync: int64(c.Sync), nodes: c.Nodes, limit: p.Limit, window: p.Window.Microseconds(),
		prefix: c.Prefix + "gs:", sliding: algorithms.FormOf(algorithm) == algorithms.FormTwoWindowCounts, views: map[viewKey]*view{}, applied: map[string][]applied{},
	}
	margin := 2*c.Skew + c.Latency + c.PeerLatency
	g.ttl = ceilDiv(int64(2*p.Window+margin), int64(time.Millisecond))
	for _, per := range periods {
		g.windows = append(g.windows, syncCounter{per, ceilDiv(int64(per.TTL+margin), int64(time.Millisecond))})
		g.tag = algorithms.Lookup(algorithm).Name
	}
	rw, ok := st.(store.ReadWriter)
	if !ok {
		return nil, fmt.Errorf("placement global-sync: the store has no plain read and write commands")
	}
	g.rw, g.rtt = rw, int64(c.Latency)
	return g, nil
}

// counter names the store's counter of window idx for the client name.
func (g *globalSync) counter(name string, idx int64) string {
	return g.prefix + name + ":" + strconv.FormatInt(idx, 10)
}

// counterOf names the store's counter h is counted in for the client name, and its TTL
// (ms).
func (g *globalSync) counterOf(name string, h hit) (string, int64) {
	if g.windows == nil {
		return g.counter(name, h.idx), g.ttl
	}
	k := g.windows[h.period]
	return g.prefix + name + ":" + g.tag + ":" + k.Name + ":" + strconv.FormatInt(h.idx, 10), k.ttl
}

// tick is the number of node's last tick at or before at (ns); tickAt its moment.
func (g *globalSync) tick(node int, at int64) int64 {
	return floorDiv(at-g.offset(node), g.sync)
}

func (g *globalSync) tickAt(node int, n int64) int64 { return n*g.sync + g.offset(node) }

func (g *globalSync) offset(node int) int64 {
	return int64(node%max(g.nodes, 1)) * g.sync / int64(max(g.nodes, 1))
}

func (g *globalSync) push(e event) {
	g.seq++
	g.events.Push(sim.Item[event]{At: time.Duration(e.at), Seq: g.seq, Value: e})
}

// advanceGlobal runs, in time order, every send and apply due at or before now.
func (f *Fleet) advanceGlobal(now int64) error {
	g := f.place.(*globalSync)
	for g.events.Len() > 0 && g.events.Min().Value.at <= now {
		e := g.events.Pop().Value
		name := f.names[e.vk.key]
		switch e.kind {
		case sendEvent:
			v := g.views[e.vk]
			v.sendNext = false
			if f.cutOff(e.vk.node, e.at) {
				g.fails++
				v.sendNext = true // the hits stay pending for the next tick
				g.push(event{at: g.tickAt(e.vk.node, g.tick(e.vk.node, e.at)+1), kind: sendEvent, vk: e.vk})
				continue
			}
			apply := e.at + g.rtt/2
			for i := range v.pending {
				v.pending[i].at = apply
			}
			v.sent = append(v.sent, v.pending...)
			g.push(event{at: apply, kind: applyEvent, vk: e.vk, hits: v.pending})
			v.pending = nil
			g.sends++
		case applyEvent:
			if err := g.rw.SetNow(e.at); err != nil {
				return err
			}
			for _, h := range e.hits {
				c, ttl := g.counterOf(name, h)
				if _, err := g.rw.IncrExpire(c, h.cost, ttl); err != nil {
					return err
				}
				g.applied[c] = append(g.applied[c], applied{e.at, h.cost})
			}
		}
	}
	return nil
}

// cutOff reports whether node cannot reach the store at at: a store outage, or a
// partition of the node.
func (f *Fleet) cutOff(node int, at int64) bool {
	_, o := f.outageFor(node, time.Duration(at-f.cfg.Epoch), f.ownLink())
	return o != nil
}

// asOf reads the counters now and takes back what the target applied after at.
func (g *globalSync) asOf(names []string, at int64) ([]int64, error) {
	counts, err := g.rw.Get(names...)
	if err != nil {
		return nil, err
	}
	for i, c := range names {
		log := g.applied[c]
		// Increments older than an interval and a round trip are never taken back.
		keep := slices.IndexFunc(log, func(a applied) bool { return a.at >= at-g.sync-g.rtt })
		if keep < 0 {
			delete(g.applied, c)
			continue
		}
		log = log[keep:]
		g.applied[c] = log
		for _, a := range log {
			if a.at > at {
				counts[i] -= a.cost
			}
		}
	}
	return counts, nil
}

// globalView returns t's node's view of t's key, made at the node's first request for it,
// and whether the node is cut off from the target now (t.inOutage), for decideGlobal and
// decideGlobalCounters alike.
func (f *Fleet) globalView(g *globalSync, t *ticket) (*view, bool) {
	g.seen(t.node, t.now)
	vk := viewKey{t.node, t.key}
	v := g.views[vk]
	if v == nil {
		v = &view{readTick: -1, first: t.now}
		g.views[vk] = v
	}
	t.inOutage = f.cutOff(t.node, t.now)
	return v, t.inOutage
}

// sendAtNextTick has t's node send v's hits at its next tick, unless it already will.
func (g *globalSync) sendAtNextTick(t *ticket, v *view) {
	if !v.sendNext {
		v.sendNext = true
		g.push(event{at: g.tickAt(t.node, g.tick(t.node, t.now)+1), kind: sendEvent, vk: viewKey{t.node, t.key}})
	}
}

// decideGlobal takes t's decision under the global-sync placement.
func (f *Fleet) decideGlobal(t *ticket) {
	g := f.place.(*globalSync)
	if err := f.advanceGlobal(t.now); err != nil {
		f.fail(err)
		return
	}
	if g.windows != nil {
		f.decideGlobalCounters(t)
		return
	}
	name := f.names[t.key]
	us := floorDiv(t.nodeNow, 1000)
	idx := floorDiv(us, g.window)
	if g.sync == 0 {
		f.decideGlobalNow(t, name, us, idx)
		return
	}
	v, cut := f.globalView(g, t)
	// The read of the last tick whose reply has arrived, and that came after the node's
	// first request (it has no view before).
	if n := g.tick(t.node, t.now-g.rtt); !cut && g.tickAt(t.node, n) >= v.first && (n != v.readTick || idx != v.baseIdx) {
		at := g.tickAt(t.node, n) + g.rtt/2
		if err := g.rw.SetNow(t.now); err != nil {
			f.fail(err)
			return
		}
		counts, err := g.asOf([]string{g.counter(name, idx-1), g.counter(name, idx)}, at)
		if err != nil {
			f.fail(err)
			return
		}
		v.readTick, v.readAt, v.baseIdx, v.base = n, at, idx, [2]int64{counts[0], counts[1]}
		v.sent = slices.DeleteFunc(v.sent, func(h hit) bool { return h.at <= at })
	}
	count := func(i int64) int64 {
		var c int64
		if v.readTick >= 0 {
			switch i {
			case v.baseIdx:
				c = v.base[1]
			case v.baseIdx - 1:
				c = v.base[0]
			}
		}
		for _, h := range v.sent {
			if h.idx == i && (v.readTick < 0 || h.at > v.readAt) {
				c += h.cost
			}
		}
		for _, h := range v.pending {
			if h.idx == i {
				c += h.cost
			}
		}
		return c
	}
	t.d = g.decideCounts(us, idx, count(idx-1), count(idx), t.cost)
	// Every request has the node send at its next tick (a refused one adds nothing to
	// the counts, as Kong undoes its delta).
	g.sendAtNextTick(t, v)
	if !t.d.Allowed {
		return
	}
	if n := len(v.pending); n > 0 && v.pending[n-1].idx == idx {
		v.pending[n-1].cost += t.cost
	} else {
		v.pending = append(v.pending, hit{idx: idx, cost: t.cost})
	}
}

// seen records that node decided a request at now.
func (g *globalSync) seen(node int, now int64) {
	for len(g.active) <= node {
		g.active = append(g.active, [2]int64{-1, -1})
	}
	if g.active[node][0] < 0 {
		g.active[node][0] = now
	}
	g.active[node][1] = now
}

// exchanges is what the exchanges cost the store: its round trips (see globalSync).
func (g *globalSync) exchanges() int64 {
	var n int64
	for node, a := range g.active {
		if a[0] >= 0 {
			n += g.tick(node, a[1]) - g.tick(node, a[0]) + 1
		}
	}
	return n
}

// reachGlobal is the first step of a decision of sync 0, which reads and counts at the
// store at once: a node cut off from the store decides t by its outage's policy, and one
// that reaches it moves the store's clock to t's. ok says the decision goes on at g.
func (f *Fleet) reachGlobal(t *ticket) (g *globalSync, ok bool) {
	g = f.place.(*globalSync)
	if f.cutOff(t.node, t.now) {
		t.inOutage = true
		t.wait = f.cfg.StoreTimeout
		_, o := f.outageFor(t.node, time.Duration(t.now-f.cfg.Epoch), f.ownLink())
		t.d = f.failover(o, t.nd, t.key, t.nodeNow, t.cost, false)
		return nil, false
	}
	if err := g.rw.SetNow(t.now); err != nil {
		f.fail(err)
		return nil, false
	}
	return g, true
}

// decideGlobalNow decides from the store's totals and counts the hit at once: sync 0.
func (f *Fleet) decideGlobalNow(t *ticket, name string, us, idx int64) {
	g, ok := f.reachGlobal(t)
	if !ok {
		return
	}
	counts, err := g.rw.Get(g.counter(name, idx-1), g.counter(name, idx))
	if err != nil {
		f.fail(err)
		return
	}
	t.d = g.decideCounts(us, idx, counts[0], counts[1], t.cost)
	if t.d.Allowed {
		c := g.counter(name, idx)
		if _, err := g.rw.IncrExpire(c, t.cost, g.ttl); err != nil {
			f.fail(err)
			return
		}
	}
	t.trips = 1
}

// decideCounts is the algorithm's rule on the counts of the previous and current windows: the
// arithmetic of fixed_window.lua and sliding_window.lua, their RetryAfter and Reset
// included, as the node can tell them from its view.
func (g *globalSync) decideCounts(us, idx, prev, curr, cost int64) algorithms.Decision {
	limit, window := g.limit, g.window
	var v []int64 // the script's reply: allowed, remaining, retry_after, reset (µs)
	if !g.sliding {
		toEnd := (idx+1)*window - us
		switch {
		case curr+cost <= limit:
			v = []int64{1, max(limit-curr-cost, 0), 0, toEnd}
		case cost > limit:
			v = []int64{0, max(limit-curr, 0), store.Never, 0}
		default:
			reset := int64(0)
			if curr > 0 {
				reset = toEnd
			}
			v = []int64{0, max(limit-curr, 0), toEnd, reset}
		}
	} else {
		elapsed := us - idx*window
		carried := prev * (window - elapsed)
		if carried+(curr+cost)*window > limit*window {
			v = []int64{0, store.SlidingWindowRemaining(limit, window, prev, curr, elapsed), store.SlidingWindowRetry(limit, window, prev, curr, elapsed, cost), store.SlidingWindowReset(window, prev, curr, elapsed)}
		} else {
			v = []int64{1, store.SlidingWindowRemaining(limit, window, prev, curr+cost, elapsed), 0, store.SlidingWindowReset(window, prev, curr+cost, elapsed)}
		}
	}
	script := store.FixedWindowScript
	if g.sliding {
		script = store.SlidingWindowScript
	}
	r, _ := store.ReplyOf(script, v)
	return algorithms.Decision{Allowed: r.Allowed, Remaining: r.Remaining, RetryAfter: r.RetryAfter, Reset: r.Reset}
}
