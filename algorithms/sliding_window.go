package algorithms

import (
	"math"
	"time"
	"unsafe"
)

// SlidingWindowName is the two-counter sliding window's name on the command line.
const SlidingWindowName = "sliding-window"

func init() {
	Register(Kind{
		Name: SlidingWindowName, Rank: 30, Default: true,
		Summary:   "two counters: prev·(1−elapsed/W) + curr, the estimate of the notes",
		Configure: byPolicy(func(p Policy) Limiter { return NewSlidingWindow(p) }, slidingWindowBound),
		Form:      FormTwoWindowCounts, Script: "sliding_window", Tag: "sw",
	})
}

func slidingWindowBound(p Policy, span time.Duration) Bound {
	t := termsOf(p, span)
	return Bound{
		Value:   t.limit + t.limit*t.span/t.window,
		Formula: "L·(1+T/W)",
		Source: "derived in docs/worstcase.md: the part of an interval inside the current window is at most L − prev·(1−e/W), " +
			"and prev, all of it placed at the previous window's end, is still inside the interval, so the total is at most L + prev·e/W, below L + L·T/W",
		Reached: false,
	}
}

// SlidingWindow is the two-counter sliding window of the design notes and of Cloudflare's
// "Counting things, a lot of different things" (2017): per key, the cost admitted in the
// current aligned window (curr, windows as in FixedWindow) and in the one before (prev).
// It estimates the cost in the trailing window by assuming prev was spread evenly:
//
//	estimate = prev·(1 − elapsed/W) + curr,   elapsed = now − start of the current window
//
// and admits a request of cost c iff estimate + c <= Limit. When the window index advances
// by one, prev takes curr and curr starts at zero; by more than one, both are zero.
//
// The estimate is computed in float64, as the Lua script of the notes computes it. The
// notes refuse when estimate >= Limit; this admits iff estimate + c <= Limit, which is the
// same rule for whole estimates and costs of 1 and differs only when the estimate is a
// fraction in (Limit−1, Limit): there the notes admit one more request, overshooting Limit.
// It keeps 24 bytes per key.
//
// Decisions: Remaining is ⌊Limit − estimate⌋ after the decision, at least 0. RetryAfter of
// a refused request is the earliest time at which estimate + c <= Limit if nothing else is
// admitted, to the nanosecond: within the current window as prev's weight decays, or in
// the next one, or at the start of the one after, when both counters have aged out; Never
// when c exceeds Limit. Reset is the time until both counters stop counting: the end of the
// next window if curr holds anything, else the end of the current one if prev does, else
// zero. Burst is ignored. A cost below 1 counts as 1.
//
// Time that goes backwards: a key's window only moves forward, as in FixedWindow. A
// request stamped in a window before the key's latest is decided at the start of the
// latest one (elapsed = 0, where prev weighs in full, the highest estimate) and counted in
// its curr; one stamped earlier inside the latest window is decided at its own elapsed,
// which again weighs prev more than any later time would. Neither moves a counter back,
// so no window's cost is forgotten early. RetryAfter and Reset count from the request's
// own now, so they include the time from now to the start of the key's window.
type SlidingWindow struct {
	limit   int64
	window  int64 // nanoseconds
	index   windowIndex
	state   []slidingWindowState
	touched touched
}

type slidingWindowState struct {
	index int64 // ⌊t/W⌋ of the window curr belongs to, the latest seen; prev belongs to index−1
	prev  int64
	curr  int64
}

var (
	_ Limiter  = (*SlidingWindow)(nil)
	_ Admitter = (*SlidingWindow)(nil)
	_ Reserver = (*SlidingWindow)(nil)
)

// NewSlidingWindow returns a two-counter sliding-window limiter for p, which must be valid
// (see Policy.Validate; New checks it).
func NewSlidingWindow(p Policy) *SlidingWindow {
	return &SlidingWindow{limit: p.Limit, window: int64(p.Window), index: windowIndex{window: int64(p.Window)}}
}

// Name returns "sliding-window".
func (s *SlidingWindow) Name() string { return SlidingWindowName }

// Allow decides a request of the given cost for key at now (nanoseconds since the Unix
// epoch). A now in a window before the key's latest is decided at the latest window's
// start and counted in it.
func (s *SlidingWindow) Allow(key uint32, now int64, cost int64) Decision {
	st, cost, elapsed, ok := s.admit(key, now, cost)
	var behind time.Duration // how far now is before the window's start
	if start := st.index * s.window; now < start {
		behind = ahead(start, now)
	}

	d := Decision{Allowed: ok}
	switch {
	case ok:
	case cost > s.limit:
		d.RetryAfter = Never
	default:
		d.RetryAfter = satAddDuration(behind, s.retryAfter(st.prev, st.curr, elapsed, cost))
	}
	d.Remaining = max(int64(math.Floor(float64(s.limit)-s.estimate(st.prev, st.curr, elapsed))), 0)
	switch {
	case st.curr > 0:
		d.Reset = satAddDuration(behind, time.Duration(2*s.window-elapsed))
	case st.prev > 0:
		d.Reset = satAddDuration(behind, time.Duration(s.window-elapsed))
	}
	return d
}

// Admit decides as Allow does, without the decision's Remaining, RetryAfter and Reset.
func (s *SlidingWindow) Admit(key uint32, now int64, cost int64) (bool, time.Duration) {
	_, _, _, ok := s.admit(key, now, cost)
	return ok, 0
}

// admit is the rule Allow and Admit share: it moves key's counters forward to now's
// window, counts the request in curr when its estimate fits, and returns the key's state,
// the cost (at least 1), the elapsed time into the key's window the request was judged
// at, and whether it was admitted.
func (s *SlidingWindow) admit(key uint32, now int64, cost int64) (*slidingWindowState, int64, int64, bool) {
	cost = max(cost, 1)
	if int(key) >= len(s.state) {
		s.state = grow(s.state, key, slidingWindowState{index: unseen})
	}
	st := &s.state[key]
	if index := s.index.of(now); index > st.index {
		if index == st.index+1 {
			st.prev, st.curr = st.curr, 0
		} else {
			st.prev, st.curr = 0, 0
		}
		st.index = index
	}
	var elapsed int64
	if start := st.index * s.window; now >= start {
		elapsed = now - start
	}
	if cost > s.limit || !s.fits(st.prev, st.curr, elapsed, cost) {
		return st, cost, elapsed, false
	}
	st.curr += cost
	return st, cost, elapsed, true
}

// estimate is the weighted count at elapsed nanoseconds into the current window.
func (s *SlidingWindow) estimate(prev, curr, elapsed int64) float64 {
	return float64(prev)*(1-float64(elapsed)/float64(s.window)) + float64(curr)
}

// fits reports whether cost fits under the limit at elapsed nanoseconds into the window
// whose counters are prev and curr. For fixed counters it is monotone in elapsed: false up
// to some instant and true from then on.
func (s *SlidingWindow) fits(prev, curr, elapsed, cost int64) bool {
	if prev == 0 {
		// The estimate is float64(curr) exactly (0 times a finite weight is zero), so
		// the division that weighs prev is not needed.
		return float64(curr)+float64(cost) <= float64(s.limit)
	}
	return s.estimate(prev, curr, elapsed)+float64(cost) <= float64(s.limit)
}

// retryAfter returns the time from elapsed until cost fits, assuming nothing else is
// admitted. It requires cost <= limit, so the request fits at the latest when both counters
// have aged out, two window starts from now.
func (s *SlidingWindow) retryAfter(prev, curr, elapsed, cost int64) time.Duration {
	if e, ok := s.earliest(prev, curr, elapsed, cost); ok {
		return time.Duration(e - elapsed)
	}
	toNext := s.window - elapsed
	if e, ok := s.earliest(curr, 0, 0, cost); ok {
		return time.Duration(toNext + e)
	}
	return time.Duration(toNext + s.window)
}

// earliest returns the first elapsed time in [from, W) at which cost fits with counters
// prev and curr, and false when it fits nowhere in that range. It first tries the instant
// solved from the linear decay, prev·(1 − e/W) + curr + cost = Limit, and confirms it with
// fits itself so the answer agrees with Allow to the nanosecond despite float rounding;
// should the guess be off, it falls back to bisection, which the monotonicity of fits
// makes exact.
func (s *SlidingWindow) earliest(prev, curr, from, cost int64) (int64, bool) {
	last := s.window - 1
	if s.fits(prev, curr, from, cost) {
		return from, true
	}
	if prev == 0 || !s.fits(prev, curr, last, cost) {
		return 0, false
	}
	room := float64(s.limit - curr - cost)
	guess := int64(math.Ceil(float64(s.window) * (1 - room/float64(prev))))
	if from < guess && guess <= last && s.fits(prev, curr, guess, cost) && !s.fits(prev, curr, guess-1, cost) {
		return guess, true
	}
	lo, hi := from, last // invariant: !fits(lo), fits(hi)
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if s.fits(prev, curr, mid, cost) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, true
}

// Keys returns the number of keys held: the highest key decided plus one.
func (s *SlidingWindow) Keys() int { return len(s.state) }

// StateBytes returns 24 bytes per key held.
func (s *SlidingWindow) StateBytes() int64 {
	return int64(len(s.state)) * int64(unsafe.Sizeof(slidingWindowState{}))
}

// Reserve makes room for the state of keys keys (see Reserver).
func (s *SlidingWindow) Reserve(keys int) { s.state = reserve(s.state, keys) }
