package cluster

import (
	"container/heap"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/store"
)

// GlobalAlgorithms are the algorithms the global-sync placement runs: those whose state
// is window counts, to which a node can add the hits it admitted and which it can read
// back as totals.
var GlobalAlgorithms = []string{"fixed-window", "sliding-window"}

// SyncTargets are where global-sync nodes send their hits and read the totals from.
//
//	owner  the key's owner on the consistent-hash ring (ring.go), which keeps the counts
//	       in its memory: no store (Gubernator's GLOBAL behaviour)
//	store  the shared store: INCRBY the window counters, then read them (Kong's
//	       rate-limiting plugins with sync_rate and the redis strategy)
var SyncTargets = []string{"owner", "store"}

// globalSync is the global-sync placement: every node decides from its own view of the
// key's global counts and exchanges hits with the target asynchronously.
//
// A node's view of a window's count is the total it last read from the target, plus the
// hits it sent since that read, plus the hits it admitted since it last sent. The first
// request a node sees for a key after a send (refused ones too) schedules the next send,
// Sync later (Gubernator starts its GlobalSyncWait interval at the first queued hit): the
// node sends the hits it admitted, the target adds them to the window counters half a
// round trip later and reads the current and previous windows' totals, and the reply
// reaches the node a round trip after the send. Meanwhile the node decides alone: every
// other node's admissions since its last read are invisible to it, so the fleet can
// admit about rate × (Sync + round trip) beyond the limit, more with more nodes — what
// Kong's documentation means by a counter that is accurate only when sync_rate is 0.
//
// Sync 0 is synchronous: each decision reads the totals and adds its own hit at once, one
// round trip, which is exact.
//
// The owner of a key (target owner) decides from the counts it keeps, at once and exactly;
// after a membership change the key's new owner starts its counts afresh. A node cut off
// by a partition (Outage.Nodes) cannot send: it keeps its hits and goes on deciding from
// its view, which then grows only with its own admissions — it enforces the whole limit
// alone — until a send gets through.
type globalSync struct {
	rw       store.ReadWriter // the target's counters: the store, or the owners' memory
	toOwner  bool
	ring     *ring // target owner
	sync     int64 // ns
	rtt      int64 // ns: the round trip of an exchange
	limit    int64
	window   int64 // µs
	ttl      int64 // ms: the counters' TTL, for garbage collection only
	prefix   string
	sliding  bool
	views    map[viewKey]*view
	events   eventQueue
	seq      int64
	syncs    int64 // exchanges that reached the target
	failures int64 // sends a partition stopped
	hops     int64 // synchronous decisions forwarded to an owner (sync 0, target owner)
}

type viewKey struct {
	node int
	key  uint32
}

// view is one node's view of one key's global counts.
type view struct {
	baseIdx  int64    // the window index of base[1]; base[0] is the window before
	base     [2]int64 // the totals last read
	pending  []hit    // admitted, not yet sent
	flights  []flight // sent, reply not yet arrived, in send order
	sendNext bool     // a send is scheduled
}

type hit struct{ idx, cost int64 }

// flight is one exchange under way: the hits it carries, and once the target has applied
// them, the totals it read and when they reach the node.
type flight struct {
	hits    []hit
	applied bool
	idx     int64
	counts  [2]int64
	replyAt int64
}

type eventKind uint8

const (
	sendEvent  eventKind = iota // the node sends its pending hits
	applyEvent                  // the target applies a flight and reads the totals
)

type event struct {
	at   int64
	seq  int64
	kind eventKind
	vk   viewKey
}

type eventQueue []event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	return q[i].at < q[j].at || q[i].at == q[j].at && q[i].seq < q[j].seq
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(event)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

func newGlobalSync(c Config, algorithm string, p algorithms.Policy, st store.Store) (*globalSync, error) {
	if !slices.Contains(GlobalAlgorithms, algorithm) {
		return nil, fmt.Errorf("placement global-sync: no counter form of %q (want one of %s)", algorithm, strings.Join(GlobalAlgorithms, ", "))
	}
	if err := store.CheckPolicy(p); err != nil {
		return nil, err
	}
	g := &globalSync{
		toOwner: c.SyncTo != "store", sync: int64(c.Sync), limit: p.Limit, window: p.Window.Microseconds(),
		prefix: c.Prefix + "gs:", sliding: algorithm == "sliding-window", views: map[viewKey]*view{},
	}
	g.ttl = ceilDiv(int64(2*p.Window+2*c.Skew+c.Latency+c.PeerLatency), int64(time.Millisecond))
	if g.toOwner {
		g.rw, g.ring, g.rtt = store.NewModel(), newRing(c.VNodes), int64(c.PeerLatency)
		return g, nil
	}
	rw, ok := st.(store.ReadWriter)
	if !ok {
		return nil, fmt.Errorf("placement global-sync: the store has no plain read and write commands")
	}
	g.rw, g.rtt = rw, int64(c.Latency)
	return g, nil
}

// resize follows a membership change: with target owner, keys move to new owners that
// start their counts afresh.
func (g *globalSync) resize(n int) {
	if g.ring != nil {
		g.ring.resize(n)
	}
}

// counter names the target's counter of window idx for the client name, at the owner
// that keeps it (target owner: the owner's index is part of the name, so a new owner
// starts empty).
func (g *globalSync) counter(name string, idx int64) string {
	p := g.prefix
	if g.toOwner {
		p = "o" + strconv.Itoa(g.ring.owner(name)) + ":"
	}
	return p + name + ":" + strconv.FormatInt(idx, 10)
}

func (g *globalSync) push(at int64, kind eventKind, vk viewKey) {
	g.seq++
	heap.Push(&g.events, event{at: at, seq: g.seq, kind: kind, vk: vk})
}

// advance runs, in time order, every send and apply due at or before now.
func (f *Fleet) advanceGlobal(now int64) error {
	g := f.gs
	for len(g.events) > 0 && g.events[0].at <= now {
		e := heap.Pop(&g.events).(event)
		v := g.views[e.vk]
		name := f.names[e.vk.key]
		switch e.kind {
		case sendEvent:
			v.sendNext = false
			if len(v.pending) == 0 && len(v.flights) > 0 {
				continue // nothing to send and a read already under way
			}
			if f.cutOff(e.vk.node, name, e.at) {
				g.failures++
				continue // the hits stay pending for the next send
			}
			v.flights = append(v.flights, flight{hits: v.pending, idx: f.windowIndex(e.vk.node, e.at)})
			v.pending = nil
			g.push(e.at+g.rtt/2, applyEvent, e.vk)
		case applyEvent:
			fl := &v.flights[slices.IndexFunc(v.flights, func(fl flight) bool { return !fl.applied })]
			if err := g.rw.SetNow(e.at); err != nil {
				return err
			}
			for _, h := range fl.hits {
				if _, err := g.rw.IncrExpire(g.counter(name, h.idx), h.cost, g.ttl); err != nil {
					return err
				}
			}
			counts, err := g.rw.Get(g.counter(name, fl.idx-1), g.counter(name, fl.idx))
			if err != nil {
				return err
			}
			fl.applied, fl.counts, fl.replyAt, fl.hits = true, [2]int64{counts[0], counts[1]}, e.at+g.rtt-g.rtt/2, nil
			g.syncs++
			if !g.toOwner {
				f.roundTrips++
			}
		}
	}
	return nil
}

// cutOff reports whether node cannot reach the target at at: a store outage, or a
// partition of the node or, for target owner, of the key's owner.
func (f *Fleet) cutOff(node int, name string, at int64) bool {
	elapsed := time.Duration(at - f.cfg.Epoch)
	if _, o := f.outageFor(node, elapsed); o != nil {
		return true
	}
	if f.gs.toOwner {
		_, o := f.outageFor(f.gs.ring.owner(name), elapsed)
		return o != nil
	}
	return false
}

// windowIndex is the window node's clock is in at true time at.
func (f *Fleet) windowIndex(node int, at int64) int64 {
	return floorDiv(floorDiv(at+f.nodes[node].skew, 1000), f.gs.window)
}

// decideGlobal takes t's decision under the global-sync placement.
func (f *Fleet) decideGlobal(t *ticket) {
	g := f.gs
	if err := f.advanceGlobal(t.now); err != nil {
		f.fail(err)
		return
	}
	name := f.names[t.key]
	us := floorDiv(t.nodeNow, 1000)
	idx := floorDiv(us, g.window)
	owner := g.toOwner && g.ring.owner(name) == t.node
	if g.sync == 0 || owner {
		f.decideGlobalNow(t, name, us, idx, owner)
		return
	}
	vk := viewKey{t.node, t.key}
	v := g.views[vk]
	if v == nil {
		v = &view{}
		g.views[vk] = v
	}
	// Replies that have reached the node replace its base.
	for len(v.flights) > 0 && v.flights[0].applied && v.flights[0].replyAt <= t.now {
		v.baseIdx, v.base = v.flights[0].idx, v.flights[0].counts
		v.flights = v.flights[1:]
	}
	count := func(i int64) int64 {
		var c int64
		switch i {
		case v.baseIdx:
			c = v.base[1]
		case v.baseIdx - 1:
			c = v.base[0]
		}
		for _, fl := range v.flights {
			for _, h := range fl.hits {
				if h.idx == i {
					c += h.cost
				}
			}
		}
		for _, h := range v.pending {
			if h.idx == i {
				c += h.cost
			}
		}
		return c
	}
	t.allowed, t.remaining = g.decide(us, idx, count(idx-1), count(idx), t.cost)
	if t.allowed {
		if n := len(v.pending); n > 0 && v.pending[n-1].idx == idx {
			v.pending[n-1].cost += t.cost
		} else {
			v.pending = append(v.pending, hit{idx, t.cost})
		}
	}
	if !v.sendNext {
		v.sendNext = true
		g.push(t.now+g.sync, sendEvent, vk)
	}
	if f.cutOffNow(t, name) {
		t.inOutage = true
	}
}

// cutOffNow reports whether t's node is cut off from the target (for the outage figures;
// a global-sync decision itself never waits for the target).
func (f *Fleet) cutOffNow(t *ticket, name string) bool { return f.cutOff(t.node, name, t.now) }

// decideGlobalNow decides from the target's totals and counts the hit at once: sync 0, or
// the owner deciding its own key.
func (f *Fleet) decideGlobalNow(t *ticket, name string, us, idx int64, owner bool) {
	g := f.gs
	if !owner && f.cutOff(t.node, name, t.now) {
		t.inOutage = true
		t.wait = f.cfg.StoreTimeout
		f.storeTimeouts++
		_, o := f.outageFor(t.node, time.Duration(t.now-f.cfg.Epoch))
		if o == nil {
			_, o = f.outageFor(g.ring.owner(name), time.Duration(t.now-f.cfg.Epoch))
		}
		t.allowed = f.failover(o, t.nd, t.key, t.nodeNow, t.cost, false)
		return
	}
	if err := g.rw.SetNow(t.now); err != nil {
		f.fail(err)
		return
	}
	counts, err := g.rw.Get(g.counter(name, idx-1), g.counter(name, idx))
	if err != nil {
		f.fail(err)
		return
	}
	t.allowed, t.remaining = g.decide(us, idx, counts[0], counts[1], t.cost)
	if t.allowed {
		if _, err := g.rw.IncrExpire(g.counter(name, idx), t.cost, g.ttl); err != nil {
			f.fail(err)
			return
		}
	}
	switch {
	case owner:
	case g.toOwner:
		g.hops++
		t.wait = time.Duration(g.rtt)
	default:
		t.trips = 1
	}
}

// decide is the algorithm's rule on the counts of the previous and current windows (the
// arithmetic of fixed_window.lua and sliding_window.lua).
func (g *globalSync) decide(us, idx, prev, curr, cost int64) (bool, int64) {
	limit, window := g.limit, g.window
	if !g.sliding {
		if curr+cost > limit {
			return false, max(limit-curr, 0)
		}
		return true, max(limit-curr-cost, 0)
	}
	carried := prev * (window - (us - idx*window))
	remaining := func(c int64) int64 {
		room := limit*window - carried - c*window
		if room < 0 {
			return 0
		}
		return floorDiv(room, window)
	}
	if carried+(curr+cost)*window > limit*window {
		return false, remaining(curr)
	}
	return true, remaining(curr + cost)
}
