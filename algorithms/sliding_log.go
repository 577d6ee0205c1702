package algorithms

import (
	"time"
	"unsafe"
)

// SlidingLogName is the sliding log's name on the command line.
const SlidingLogName = "sliding-log"

func init() {
	Register(Kind{
		Name: SlidingLogName, Rank: 20, Default: true,
		Summary:   "every admitted request in the trailing window W: exact",
		Configure: byPolicy(func(p Policy) Limiter { return NewSlidingLog(p) }, slidingLogBound),
		Form:      FormTimestamps, Script: "sliding_log", Tag: "sl",
	})
}

func slidingLogBound(p Policy, span time.Duration) Bound {
	t := termsOf(p, span)
	return Bound{
		Value:   t.limit * t.windows,
		Formula: "L·⌈T/W⌉",
		Source:  "exact log: an interval of length T splits into ⌈T/W⌉ pieces no longer than W, each holding at most L",
		Reached: true,
	}
}

// SlidingLog keeps, per key, every admitted (time, cost) of the trailing window
// (now−W, now] and admits a request of cost c iff the costs held plus c are at most Limit.
// It is exact: no window of length W, in any alignment, ever holds more than Limit admitted
// units. It is the reference the other algorithms are judged against, and the most
// expensive: a key holds up to Limit entries of 16 bytes (a Redis sorted set holds one
// member per request in the same way).
//
// An entry admitted at t leaves the window at t+W exactly. Decisions: Remaining is Limit
// minus the cost held after the decision. RetryAfter of a refused request is the time until
// enough of the oldest entries have left for its cost to fit, or Never when its cost exceeds
// Limit. Reset is the time until the newest entry leaves (zero when the log is empty). Burst
// is ignored. A cost below 1 counts as 1.
//
// Time that goes backwards: a key's clock is the time of its newest entry, and it never
// moves back. A request stamped before it is decided, and if admitted recorded, at that
// newest time, so the log stays in time order and the request's cost stays in the window
// at least as long as if it had come on time. No entry leaves the window because of a
// request whose stamp later ones undercut: a refused request drops only the entries that
// every later decision, made at the newest entry's time or after, would drop too. It is
// then exact on its own clock: no window of length W on the times it records holds more
// than Limit. RetryAfter and Reset count from the request's own now, so they include the
// time from now to the newest entry.
type SlidingLog struct {
	limit      int64
	window     int64 // nanoseconds
	logs       []Log
	entryBytes int64 // sum of the ring capacities of logs, in bytes
	touched    touched
}

var (
	_ Limiter  = (*SlidingLog)(nil)
	_ Admitter = (*SlidingLog)(nil)
	_ Reserver = (*SlidingLog)(nil)
)

// NewSlidingLog returns a sliding-log limiter for p, which must be valid
// (see Policy.Validate; New checks it).
func NewSlidingLog(p Policy) *SlidingLog {
	return &SlidingLog{limit: p.Limit, window: int64(p.Window)}
}

// Name returns "sliding-log".
func (s *SlidingLog) Name() string { return SlidingLogName }

// Allow decides a request of the given cost for key at now (nanoseconds since the Unix
// epoch). A now before the key's newest entry is decided and recorded at that entry's time.
func (s *SlidingLog) Allow(key uint32, now int64, cost int64) Decision {
	st := s.admit(key, now, cost)
	d := Decision{Allowed: st.ok, Remaining: s.limit - st.sum}
	switch {
	case st.ok:
	case st.cost > s.limit:
		d.RetryAfter = Never
	default:
		d.RetryAfter = s.retryAfter(st.log, st.gone, st.sum, now, st.cost)
	}
	if st.log.Len() > st.gone {
		d.Reset = ahead(st.newest+s.window, now)
	}
	return d
}

// Admit decides as Allow does, without the decision's Remaining, RetryAfter and Reset.
func (s *SlidingLog) Admit(key uint32, now int64, cost int64) (bool, time.Duration) {
	return s.admit(key, now, cost).ok, 0
}

// slidingLogStep is what admit found: the key's log, the time of its newest entry, how
// many of its oldest entries have left the window of the request (left in place on a
// refusal), the cost in the window after the decision, the cost (at least 1) and whether
// the request was admitted.
type slidingLogStep struct {
	log       *Log
	newest    int64
	gone      int
	sum, cost int64
	ok        bool
}

// admit is the rule Allow and Admit share: the request is decided at at = max(now, the
// key's newest entry) and admitted iff the cost in (at−W, at] plus its own is at most
// Limit; then the entries that left the window are dropped and the request is recorded
// at at.
func (s *SlidingLog) admit(key uint32, now int64, cost int64) slidingLogStep {
	st := slidingLogStep{cost: max(cost, 1)}
	if int(key) >= len(s.logs) {
		s.logs = grow(s.logs, key, Log{})
	}
	l := &s.logs[key]
	st.log = l
	at := now
	newest, _, held := l.Newest()
	if held && newest > now {
		at = newest
	}
	st.newest = newest
	// Entries at or before at−W have left the window of this request. An admission drops
	// them; a refusal leaves them to the next request, which may be stamped earlier. (The
	// log never holds an entry at or before newest−W: the admission of newest dropped them.)
	gone, goneCost := l.upTo(at - s.window)
	st.gone, st.sum = gone, l.Sum()-goneCost
	if st.cost > s.limit-st.sum {
		return st
	}
	if gone > 0 {
		l.dropOldest(gone, goneCost)
	}
	before := l.entryBytes()
	l.Push(at, st.cost)
	s.entryBytes += l.entryBytes() - before
	st.newest, st.gone, st.sum, st.ok = at, 0, st.sum+st.cost, true
	return st
}

// retryAfter returns the time from now until the oldest entries of l whose removal frees
// room for cost have left the window, skipping the first gone entries, which already have.
// It requires cost <= limit < sum+cost, where sum is the cost of the entries after gone,
// so such entries exist.
func (s *SlidingLog) retryAfter(l *Log, gone int, sum, now, cost int64) time.Duration {
	excess := sum + cost - s.limit
	for i := gone; i < l.Len(); i++ {
		t, c := l.At(i)
		excess -= c
		if excess <= 0 {
			return ahead(t+s.window, now)
		}
	}
	panic("algorithms: sliding log sum out of step with its entries")
}

// Keys returns the number of keys held: the highest key decided plus one.
func (s *SlidingLog) Keys() int { return len(s.logs) }

// StateBytes returns, summed over keys, the Log value (48 bytes) plus its ring's capacity
// (16 bytes an entry; a ring never shrinks, so this is each key's high-water mark).
func (s *SlidingLog) StateBytes() int64 {
	return int64(len(s.logs))*int64(unsafe.Sizeof(Log{})) + s.entryBytes
}

// Reserve makes room for the state of keys keys (see Reserver).
func (s *SlidingLog) Reserve(keys int) { s.logs = reserve(s.logs, keys) }
