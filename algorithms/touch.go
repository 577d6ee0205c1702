package algorithms

import "unsafe"

// Toucher is implemented by limiters whose per-key state is a table of every key, so that
// with many keys each decision begins with a cache miss. Touch reads the state of keys,
// the keys of the requests about to be decided, in one loop whose reads do not depend on
// one another: the processor has a dozen of those misses on their way at once, where the
// decisions, each reading its key's state after the one before has finished, would wait
// for them one at a time. It changes nothing; keys without state yet are skipped.
type Toucher interface {
	Touch(keys []uint32)
}

var (
	_ Toucher = (*FixedWindow)(nil)
	_ Toucher = (*SlidingWindow)(nil)
	_ Toucher = (*SlidingLog)(nil)
	_ Toucher = (*TokenBucket)(nil)
	_ Toucher = (*GCRA)(nil)
	_ Toucher = (*LeakyBucket)(nil)
)

// touched is what a Touch read, kept so that the reads are not left out as unused. A
// limiter is decided by one goroutine at a time, so each keeps its own.
type touched struct{ sum int64 }

// touchStates reads the first byte of the state of each of keys held in state, the line
// a decision of that key reads first, and returns what it read.
func touchStates[T any](state []T, keys []uint32) int64 {
	var sum int64
	for _, k := range keys {
		if int(k) < len(state) {
			sum += int64(*(*byte)(unsafe.Pointer(&state[k])))
		}
	}
	return sum
}

// Touch reads the window of each key (see Toucher).
func (f *FixedWindow) Touch(keys []uint32) { f.touched.sum += touchStates(f.state, keys) }

// Touch reads the windows of each key (see Toucher).
func (s *SlidingWindow) Touch(keys []uint32) { s.touched.sum += touchStates(s.state, keys) }

// Touch reads the bucket of each key (see Toucher).
func (b *TokenBucket) Touch(keys []uint32) { b.touched.sum += touchStates(b.state, keys) }

// Touch reads the theoretical arrival time of each key (see Toucher).
func (g *GCRA) Touch(keys []uint32) { g.touched.sum += touchStates(g.tat, keys) }

// Touch reads each key's log and then, in a second loop, the entries of its ring that a
// decision reads: the oldest, which may leave the window, and the newest, which the
// request is stamped after (see Toucher).
func (s *SlidingLog) Touch(keys []uint32) {
	logs := s.logs
	sum := touchStates(logs, keys)
	for _, k := range keys {
		if int(k) >= len(logs) {
			continue
		}
		l := &logs[k]
		if l.ring == nil || l.n == 0 {
			continue
		}
		mask := uint32(len(l.ring) - 1)
		sum += l.ring[l.head&mask].t + l.ring[(l.head+l.n-1)&mask].t
	}
	s.touched.sum += sum
}
