package algorithms

import (
	"time"
	"unsafe"
)

// FixedWindowName is the fixed window's name on the command line.
const FixedWindowName = "fixed-window"

func init() {
	Register(Kind{
		Name: FixedWindowName, Rank: 10, Default: true,
		Summary:   "a counter per window aligned to multiples of W on the Unix clock",
		Configure: byPolicy(func(p Policy) Limiter { return NewFixedWindow(p) }, fixedWindowBound),
		Form:      FormWindowCount, Script: "fixed_window", Tag: "fw",
	})
}

// fixedWindowBound: an interval of length T meets at most ⌈T/W⌉+1 aligned windows, and
// each admits L afresh.
func fixedWindowBound(p Policy, span time.Duration) Bound {
	t := termsOf(p, span)
	return Bound{
		Value:   t.limit * (t.windows + 1),
		Formula: "L·(⌈T/W⌉+1)",
		Source:  "aligned windows: an interval of length T meets at most ⌈T/W⌉+1 of them and each admits L afresh (the notes' boundary case: 2L across one edge)",
		Reached: true,
	}
}

// FixedWindow admits up to Limit units per key in each window [k·W, (k+1)·W) aligned to
// multiples of the policy's Window W on the Unix clock (k = ⌊now/W⌋, now in nanoseconds
// since the Unix epoch), as a Redis counter named by ⌊unix/W⌋ does. A request of cost c is
// admitted iff count + c <= Limit; the count starts over at zero at every window start.
//
// It keeps 16 bytes per key (the window index and its count). Because windows are aligned,
// a client can spend Limit at the end of one window and Limit again at the start of the
// next: up to 2·Limit in a span just over zero, which is the boundary case the other
// algorithms exist to avoid.
//
// Decisions: Remaining is Limit − count after the decision. RetryAfter of a refused request
// is the time to the next window start, or Never when its cost exceeds Limit. Reset is the
// time to the next window start, or zero when the current window holds nothing. Burst is
// ignored. A cost below 1 counts as 1.
//
// Time that goes backwards: a key's window only moves forward. A request stamped in a
// window before the key's latest is counted in the latest one, so stepping back never
// starts a count over (which would admit Limit afresh in a window already spent). Its
// RetryAfter and Reset still count from its own now to the end of the window it was
// counted in, so they can exceed Window.
type FixedWindow struct {
	limit   int64
	window  int64 // nanoseconds
	index   windowIndex
	state   []fixedWindowState
	touched touched
}

type fixedWindowState struct {
	index int64 // ⌊t/W⌋ of the window count belongs to, the latest seen; unseen for a new key
	count int64 // cost admitted in that window
}

var (
	_ Limiter  = (*FixedWindow)(nil)
	_ Admitter = (*FixedWindow)(nil)
	_ Reserver = (*FixedWindow)(nil)
)

// NewFixedWindow returns a fixed-window limiter for p, which must be valid
// (see Policy.Validate; New checks it).
func NewFixedWindow(p Policy) *FixedWindow {
	return &FixedWindow{limit: p.Limit, window: int64(p.Window), index: windowIndex{window: int64(p.Window)}}
}

// Name returns "fixed-window".
func (f *FixedWindow) Name() string { return FixedWindowName }

// Allow decides a request of the given cost for key at now (nanoseconds since the Unix
// epoch). A now in a window before the key's latest counts in the latest.
func (f *FixedWindow) Allow(key uint32, now int64, cost int64) Decision {
	s, cost, ok := f.admit(key, now, cost)
	toNext := time.Duration(f.window)
	if start := s.index * f.window; now >= start {
		toNext -= time.Duration(now - start)
	} else {
		toNext = satAddDuration(ahead(start, now), toNext)
	}

	d := Decision{Allowed: ok, RetryAfter: toNext}
	switch {
	case ok:
		d.RetryAfter = 0
	case cost > f.limit:
		d.RetryAfter = Never
	}
	d.Remaining = f.limit - s.count
	if s.count > 0 {
		d.Reset = toNext
	}
	return d
}

// Admit decides as Allow does, without the decision's Remaining, RetryAfter and Reset.
func (f *FixedWindow) Admit(key uint32, now int64, cost int64) (bool, time.Duration) {
	_, _, ok := f.admit(key, now, cost)
	return ok, 0
}

// admit is the rule Allow and Admit share: it moves key's window forward to now's, counts
// the request in it when it fits, and returns the key's state, the cost counted (at least
// 1) and whether the request was admitted.
func (f *FixedWindow) admit(key uint32, now int64, cost int64) (*fixedWindowState, int64, bool) {
	cost = max(cost, 1)
	if int(key) >= len(f.state) {
		f.state = grow(f.state, key, fixedWindowState{index: unseen})
	}
	s := &f.state[key]
	if index := f.index.of(now); index > s.index {
		s.index, s.count = index, 0
	}
	if cost > f.limit-s.count {
		return s, cost, false
	}
	s.count += cost
	return s, cost, true
}

// Keys returns the number of keys held: the highest key decided plus one.
func (f *FixedWindow) Keys() int { return len(f.state) }

// StateBytes returns 16 bytes per key held.
func (f *FixedWindow) StateBytes() int64 {
	return int64(len(f.state)) * int64(unsafe.Sizeof(fixedWindowState{}))
}

// Reserve makes room for the state of keys keys (see Reserver).
func (f *FixedWindow) Reserve(keys int) { f.state = reserve(f.state, keys) }
