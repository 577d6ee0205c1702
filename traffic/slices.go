package traffic

import "time"

// SliceCount counts events over a trailing window kept as a fixed number of slices: the
// window of width W is cut into Slices slices of W/Slices, aligned to t=0, and the count
// covers the current slice and the Slices−1 before it. (Finagle's WindowedAdder, which
// the retry budget follows exactly, anchors its slices where it is touched instead:
// windowedAdder in budget.go.) Memory is one counter per slice, whatever the traffic; the
// price is that an event leaves the count up to one slice late. The zero value is not
// usable: build it with NewSliceCount.
type SliceCount struct {
	width  time.Duration
	counts []int64
	// last is the index (since t=0) of the newest slice written; -1 before any.
	last int64
}

// NewSliceCount returns a count over a window of w (w > 0) cut into slices (≥ 1) slices.
func NewSliceCount(w time.Duration, slices int) SliceCount {
	slices = max(slices, 1)
	return SliceCount{width: max(w/time.Duration(slices), 1), counts: make([]int64, slices), last: -1}
}

// advance moves the window to the slice of now, clearing the slices it leaves behind.
// A now earlier than the newest slice counts in the newest one (time never runs back
// inside a run; this only keeps the count whole if it did).
func (s *SliceCount) advance(now time.Duration) int64 {
	i := int64(now / s.width)
	if i <= s.last {
		return s.last
	}
	n := int64(len(s.counts))
	if s.last < 0 || i-s.last >= n {
		clear(s.counts)
	} else {
		for j := s.last + 1; j <= i; j++ {
			s.counts[j%n] = 0
		}
	}
	s.last = i
	return i
}

// Add counts n events at now.
func (s *SliceCount) Add(now time.Duration, n int64) {
	i := s.advance(now)
	s.counts[i%int64(len(s.counts))] += n
}

// Sum is the count over the window ending at now.
func (s *SliceCount) Sum(now time.Duration) int64 {
	s.advance(now)
	var t int64
	for _, c := range s.counts {
		t += c
	}
	return t
}
