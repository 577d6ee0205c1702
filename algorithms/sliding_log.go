package algorithms

import (
	"time"
	"unsafe"
)

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
}

var (
	_ Limiter  = (*SlidingLog)(nil)
	_ Reserver = (*SlidingLog)(nil)
)

// NewSlidingLog returns a sliding-log limiter for p, which must be valid
// (see Policy.Validate; New checks it).
func NewSlidingLog(p Policy) *SlidingLog {
	return &SlidingLog{limit: p.Limit, window: int64(p.Window)}
}

// Name returns "sliding-log".
func (s *SlidingLog) Name() string { return "sliding-log" }

// Allow decides a request of the given cost for key at now (nanoseconds since the Unix
// epoch). A now before the key's newest entry is decided and recorded at that entry's time.
func (s *SlidingLog) Allow(key uint32, now int64, cost int64) Decision {
	cost = max(cost, 1)
	if int(key) >= len(s.logs) {
		s.logs = grow(s.logs, key, Log{})
	}
	l := &s.logs[key]
	at := now
	newest, _, held := l.Newest()
	if held && newest > now {
		at = newest
	}
	// Entries at or before at−W have left the window of this request. An admission drops
	// them; a refusal leaves them to the next request, which may be stamped earlier. (The
	// log never holds an entry at or before newest−W: the admission of newest dropped them.)
	gone, goneCost := l.upTo(at - s.window)
	sum := l.Sum() - goneCost

	var d Decision
	switch {
	case cost > s.limit:
		d.RetryAfter = Never
	case sum+cost <= s.limit:
		if gone > 0 {
			l.dropOldest(gone, goneCost)
		}
		before := l.entryBytes()
		l.Push(at, cost)
		s.entryBytes += l.entryBytes() - before
		newest, gone, sum = at, 0, sum+cost
		d.Allowed = true
	default:
		d.RetryAfter = s.retryAfter(l, gone, sum, now, cost)
	}
	d.Remaining = s.limit - sum
	if l.Len() > gone {
		d.Reset = ahead(newest+s.window, now)
	}
	return d
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
