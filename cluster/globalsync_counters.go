package cluster

import (
	"math"
	"slices"
	"time"

	"github.com/rlsim/rlsim/algorithms"
)

// decideGlobalCounters takes t's decision under the global-sync placement for Kong's periods
// (see globalSync): decideGlobal's steps, with one count per period.
func (f *Fleet) decideGlobalCounters(t *ticket) {
	g := f.place.(*globalSync)
	name := f.names[t.key]
	idx, ends := make([]int64, len(g.windows)), make([]int64, len(g.windows))
	for i, k := range g.windows {
		idx[i], ends[i] = k.Window(t.nodeNow)
	}
	if g.sync == 0 {
		f.decideCountersNow(t, name, idx, ends)
		return
	}
	v, cut := f.globalView(g, t)
	// The read of the last tick whose reply has arrived, as decideGlobal's.
	if n := g.tick(t.node, t.now-g.rtt); !cut && g.tickAt(t.node, n) >= v.first && (n != v.readTick || !slices.Equal(idx, v.counterIdx)) {
		at := g.tickAt(t.node, n) + g.rtt/2
		if err := g.rw.SetNow(t.now); err != nil {
			f.fail(err)
			return
		}
		counts, err := g.asOf(g.counterNames(name, idx), at)
		if err != nil {
			f.fail(err)
			return
		}
		v.readTick, v.readAt, v.counterIdx, v.counterBase = n, at, idx, counts
		v.sent = slices.DeleteFunc(v.sent, func(h hit) bool { return h.at <= at })
	}
	usage := make([]int64, len(g.windows))
	for i := range usage {
		if v.readTick >= 0 && v.counterIdx[i] == idx[i] {
			usage[i] = v.counterBase[i]
		}
		for _, h := range v.sent {
			if h.period == i && h.idx == idx[i] && (v.readTick < 0 || h.at > v.readAt) {
				usage[i] += h.cost
			}
		}
		for _, h := range v.pending {
			if h.period == i && h.idx == idx[i] {
				usage[i] += h.cost
			}
		}
	}
	t.d = g.decideCounters(t.nodeNow, usage, ends, t.cost, false)
	g.sendAtNextTick(t, v)
	if !t.d.Allowed {
		return // the plugin undoes a refused request's delta: it counts nowhere
	}
	for i := range g.windows {
		j := slices.IndexFunc(v.pending, func(h hit) bool { return h.period == i && h.idx == idx[i] })
		if j < 0 {
			v.pending = append(v.pending, hit{idx: idx[i], cost: t.cost, period: i})
			continue
		}
		v.pending[j].cost += t.cost
	}
}

// counterNames names the store's counters of the windows idx (per period) for name.
func (g *globalSync) counterNames(name string, idx []int64) []string {
	names := make([]string, len(idx))
	for i := range idx {
		names[i], _ = g.counterOf(name, hit{idx: idx[i], period: i})
	}
	return names
}

// decideCountersNow is Kong's sync_rate −1: every period's counter read and the request
// counted on each at once, admitted or refused, one round trip per period.
func (f *Fleet) decideCountersNow(t *ticket, name string, idx, ends []int64) {
	g, ok := f.reachGlobal(t)
	if !ok {
		return
	}
	names := g.counterNames(name, idx)
	usage, err := g.rw.Get(names...)
	if err != nil {
		f.fail(err)
		return
	}
	t.d = g.decideCounters(t.nodeNow, usage, ends, t.cost, true)
	for i, c := range names {
		if _, err := g.rw.IncrExpire(c, t.cost, g.windows[i].ttl); err != nil {
			f.fail(err)
			return
		}
	}
	t.trips = len(names)
}

// decideCounters is the plugin's rule on each period's usage before the request, with the
// windows' ends (Unix s): admitted only if every period has room for cost. refusedCounts
// says a refused request is counted too (sync_rate −1). RetryAfter and Reset are as
// algorithms.Kong's, to the µs: until every period that would refuse the same cost has a
// new window, and until every period holding anything has.
func (g *globalSync) decideCounters(nodeNow int64, usage, ends []int64, cost int64, refusedCounts bool) algorithms.Decision {
	d := algorithms.Decision{Allowed: true, Remaining: math.MaxInt64}
	least := int64(math.MaxInt64)
	for i, k := range g.windows {
		least = min(least, k.Limit)
		if usage[i]+cost > k.Limit {
			d.Allowed = false
		}
	}
	var retry, reset int64 // the latest window end, µs
	for i, k := range g.windows {
		after := usage[i]
		if d.Allowed || refusedCounts {
			after += cost
		}
		d.Remaining = min(d.Remaining, max(k.Limit-after, 0))
		end := ends[i] * int64(time.Second/time.Microsecond)
		if after > 0 {
			reset = max(reset, end)
			if after+cost > k.Limit {
				retry = max(retry, end)
			}
		}
	}
	us := floorDiv(nodeNow, 1000)
	d.Reset = time.Duration(max(reset-us, 0)) * time.Microsecond
	switch {
	case d.Allowed:
	case cost > least:
		d.RetryAfter = algorithms.Never
	default:
		d.RetryAfter = time.Duration(max(retry-us, 0)) * time.Microsecond
	}
	return d
}
