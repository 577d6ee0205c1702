package algorithms

import (
	"math"
	"time"
	"unsafe"
)

// NotesSlidingWindowName is the notes' two-counter script's name on the command line.
const NotesSlidingWindowName = "notes-sliding-window"

func init() {
	Register(Kind{
		Name: NotesSlidingWindowName, Rank: 100,
		Summary:   "the design notes' two-counter Lua script, as written",
		Configure: byPolicy(func(p Policy) Limiter { return NewNotesSlidingWindow(p) }, nil),
	})
}

// NotesSlidingWindow is the two-counter window exactly as the design notes' Lua script
// decides, kept as a variant beside SlidingWindow. Per key it holds the count of the
// current aligned window and of the one before (the script's KEYS[2] and KEYS[1], keys
// named by their window), and it decides as the script does:
//
//	elapsed   = (now − start of the current window) / W     (the script's ARGV[3])
//	estimated = prev·(1 − elapsed) + curr
//	refuse when estimated >= Limit, else INCR curr (by 1)
//
// What rlsim's SlidingWindow changes, and why:
//   - The notes refuse only once the estimate has reached the limit, so an estimate in
//     (Limit−1, Limit) — the usual case once prev is weighted by a fraction — admits one
//     more request and leaves the estimate above Limit. SlidingWindow admits a request of
//     cost c iff estimated + c <= Limit, so the estimate never passes the limit.
//   - The script counts every request as 1 (INCR): a request's cost is ignored here, so
//     a report of cost 20 uses as much of the limit as a list of cost 1. SlidingWindow
//     counts the cost.
//   - The script's refusal ({0, limit, 0}) carries no retry time. RetryAfter here is
//     computed from the script's own rule (the first instant at which estimated < Limit
//     if nothing else is admitted), so rlsim's 429 can still say when to come back.
//
// The script's EXPIRE of window·2 when INCR returns 1 never changes a decision: a
// window's key is created inside that window and so lives until at least the end of the
// next one, the last moment it is read as prev. Remaining is the script's reply,
// ⌊Limit − estimated − 1⌋ on admission (estimated before the increment) and 0 on refusal,
// never below 0. Reset is SlidingWindow's: the time until both counters stop counting.
// Burst is ignored. It keeps 24 bytes per key.
//
// Time that goes backwards: the script reads the keys of whatever window the caller's
// clock names; this in-process twin keeps only the newest two windows, so a request whose
// window is earlier than the newest one the key has seen is decided and counted in the
// newest window at its start (elapsed 0, the highest estimate), and a request earlier
// within the newest window sees the larger weight of prev its time gives. Neither credits
// an interval twice.
type NotesSlidingWindow struct {
	limit  int64
	window int64 // nanoseconds
	state  []notesWindowState
}

// notesWindowState is the script's two keys for one client: the count of the window
// ⌊t/W⌋ = index (KEYS[2]) and of the one before (KEYS[1]).
type notesWindowState struct {
	index int64
	prev  int64
	curr  int64
}

var _ Limiter = (*NotesSlidingWindow)(nil)

// NewNotesSlidingWindow returns the notes' two-counter limiter for p, which must be valid
// (see Policy.Validate; New checks it).
func NewNotesSlidingWindow(p Policy) *NotesSlidingWindow {
	return &NotesSlidingWindow{limit: p.Limit, window: int64(p.Window)}
}

// Name returns "notes-sliding-window".
func (s *NotesSlidingWindow) Name() string { return NotesSlidingWindowName }

// Allow decides a request for key at now (nanoseconds since the Unix epoch). The cost is
// ignored: the notes' script counts every request as 1.
func (s *NotesSlidingWindow) Allow(key uint32, now int64, _ int64) Decision {
	if int(key) >= len(s.state) {
		s.state = grow(s.state, key, notesWindowState{})
	}
	st := &s.state[key]
	index := floorDiv(now, s.window)
	elapsed := now - index*s.window
	var lead int64 // how far now lies before the newest window's start, when it does
	switch d := index - st.index; {
	case d == 0:
	case st.prev == 0 && st.curr == 0: // nothing counted yet: any window is fresh
	case d == 1:
		st.prev, st.curr = st.curr, 0
	case d > 1:
		st.prev, st.curr = 0, 0
	default: // an earlier window than the newest seen: the newest, at its start
		lead = st.index*s.window - now
		index, elapsed = st.index, 0
	}
	st.index = index

	estimated := s.estimate(st.prev, st.curr, elapsed)
	var d Decision
	if estimated >= float64(s.limit) {
		d.RetryAfter = time.Duration(lead) + s.retryAfter(st.prev, st.curr, elapsed)
	} else {
		st.curr++
		d.Allowed = true
		d.Remaining = max(int64(math.Floor(float64(s.limit)-estimated-1)), 0)
	}
	switch {
	case st.curr > 0:
		d.Reset = time.Duration(lead + 2*s.window - elapsed)
	case st.prev > 0:
		d.Reset = time.Duration(lead + s.window - elapsed)
	}
	return d
}

// estimate is the script's estimated at elapsed nanoseconds into the current window.
func (s *NotesSlidingWindow) estimate(prev, curr, elapsed int64) float64 {
	return float64(prev)*(1-float64(elapsed)/float64(s.window)) + float64(curr)
}

// retryAfter returns the time from elapsed until the script would admit again if
// nothing else were admitted: within this window once prev has decayed enough, else in
// the next window (where curr becomes prev), else at the start of the one after.
func (s *NotesSlidingWindow) retryAfter(prev, curr, elapsed int64) time.Duration {
	below := func(prev, curr, e int64) bool { return s.estimate(prev, curr, e) < float64(s.limit) }
	first := func(prev, curr, from int64) (int64, bool) {
		last := s.window - 1
		if below(prev, curr, from) {
			return from, true
		}
		if !below(prev, curr, last) {
			return 0, false
		}
		lo, hi := from, last // invariant: !below(lo), below(hi)
		for hi-lo > 1 {
			mid := lo + (hi-lo)/2
			if below(prev, curr, mid) {
				hi = mid
			} else {
				lo = mid
			}
		}
		return hi, true
	}
	if e, ok := first(prev, curr, elapsed); ok {
		return time.Duration(e - elapsed)
	}
	toNext := s.window - elapsed
	if e, ok := first(curr, 0, 0); ok {
		return time.Duration(toNext + e)
	}
	return time.Duration(toNext + s.window)
}

// Keys returns the number of keys held: the highest key decided plus one.
func (s *NotesSlidingWindow) Keys() int { return len(s.state) }

// StateBytes returns 24 bytes per key held.
func (s *NotesSlidingWindow) StateBytes() int64 {
	return int64(len(s.state)) * int64(unsafe.Sizeof(notesWindowState{}))
}
