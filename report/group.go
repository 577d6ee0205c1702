package report

import (
	"fmt"
	"time"

	"github.com/rlsim/rlsim/traffic"
)

// Group measures several algorithms that decide the same requests in the same order
// against the same promise — one pass over a scenario's traffic — with one collector
// each. The collectors share their per-key windows (keyWindows): a request costs one
// index and one window update for all of them, and a key one slot. Each collector
// counts, and finds its verdicts and peaks, exactly as it would alone.
type Group struct {
	cols    []*Collector
	windows *keyWindows
	window  int64
	before  []int64 // per member, scratch: the window's sum before the request
}

// MaxGroup is the most collectors one Group holds.
const MaxGroup = maxMembers

// NewGroup makes cols share one set of per-key windows. They must all measure the same
// limit and window, be at most MaxGroup, and have observed nothing yet; from then on they
// are told their decisions through the group only.
func NewGroup(cols []*Collector) (*Group, error) {
	if len(cols) == 0 || len(cols) > MaxGroup {
		return nil, fmt.Errorf("a group measures 1 to %d algorithms, not %d", MaxGroup, len(cols))
	}
	g := &Group{cols: cols, windows: newKeyWindows(len(cols)), window: cols[0].window, before: make([]int64, len(cols))}
	for i, c := range cols {
		if c.limit != cols[0].limit || c.window != cols[0].window {
			return nil, fmt.Errorf("a group measures one promise: %d per %s, and %d per %s", cols[0].limit, time.Duration(cols[0].window), c.limit, time.Duration(c.window))
		}
		if c.requests != 0 || c.windows.keys() != 0 {
			return nil, fmt.Errorf("a collector joins a group before it observes anything")
		}
		c.windows, c.member = g.windows, i
	}
	return g, nil
}

// ReleaseIdleWindows makes a key whose trailing window has emptied give back the room it
// grew for it, so that the group's memory follows the keys active at once, not every key
// that was ever busy (see keyWindows.releaseIdle). Figures do not change.
func (g *Group) ReleaseIdleWindows() { g.windows.releaseIdle = true }

// Members are the group's collectors, in the order they were given.
func (g *Group) Members() []*Collector { return g.cols }

// Reserve makes room for keys keys up front (see Collector.Reserve).
func (g *Group) Reserve(keys int) { g.windows.reserve(keys) }

// Observe records one request for key at t (ns since the start), decided by every member:
// bit i of admitted is set when collector i's algorithm admitted it, and delays[i] is the
// queueing delay it added then. It returns the reference's verdicts, bit i for collector
// i, each as Collector.Observe would return it.
func (g *Group) Observe(key uint32, t int64, cost int64, class traffic.Class, admitted uint64, delays []time.Duration) (referenceAllowed uint64) {
	for _, c := range g.cols {
		c.TimelineAt(t)
	}
	w := g.windows
	slot := w.slot(key)
	w.expire(slot, t-g.window)
	if _, sums := w.spilled(slot); sums != nil {
		copy(g.before, sums)
	} else {
		// Empty, or one entry inline: its cost for the members that admitted it.
		held, members := int64(slot.cost), uint64(slot.ref)
		for i := range g.before {
			g.before[i] = held * int64(members>>i&1)
		}
	}
	if admitted != 0 {
		w.push(slot, t, cost, admitted)
	}
	for i, c := range g.cols {
		if c.record(key, t, cost, class, admitted&(1<<i) != 0, int64(delays[i]), g.before[i]) {
			referenceAllowed |= 1 << i
		}
	}
	return referenceAllowed
}
