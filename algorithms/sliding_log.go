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
// epoch, non-decreasing across calls).
func (s *SlidingLog) Allow(key uint32, now int64, cost int64) Decision {
	cost = max(cost, 1)
	if int(key) >= len(s.logs) {
		s.logs = grow(s.logs, key, Log{})
	}
	l := &s.logs[key]
	l.Expire(now - s.window)

	var d Decision
	switch {
	case cost > s.limit:
		d.RetryAfter = Never
	case l.Sum()+cost <= s.limit:
		before := l.entryBytes()
		l.Push(now, cost)
		s.entryBytes += l.entryBytes() - before
		d.Allowed = true
	default:
		d.RetryAfter = s.retryAfter(l, now, cost)
	}
	d.Remaining = s.limit - l.Sum()
	if t, _, ok := l.Newest(); ok {
		d.Reset = time.Duration(t + s.window - now)
	}
	return d
}

// retryAfter returns the time until the oldest entries of l whose removal frees room for
// cost have left the window. It requires cost <= limit < l.Sum()+cost, so such entries exist.
func (s *SlidingLog) retryAfter(l *Log, now, cost int64) time.Duration {
	excess := l.Sum() + cost - s.limit
	for i := range l.Len() {
		t, c := l.At(i)
		excess -= c
		if excess <= 0 {
			return time.Duration(t + s.window - now)
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
