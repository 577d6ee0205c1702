package traffic

import (
	"fmt"
	"math/bits"
	"time"
)

// Burst is one scripted line: Count requests for Key starting At, spaced evenly over
// Spread (all at the same instant when Spread is zero).
type Burst struct {
	At     time.Duration
	Count  int64
	Spread time.Duration
	Key    string
	Cost   int64
	Class  Class
}

// BurstSource yields the requests of one Burst.
type BurstSource struct {
	b    Burst
	next int64
}

var _ Source = (*BurstSource)(nil)

// NewBurst returns a source for b. A zero Cost means 1.
func NewBurst(b Burst) *BurstSource {
	if b.Cost == 0 {
		b.Cost = 1
	}
	return &BurstSource{b: b}
}

// Next implements Source. The i-th of n requests arrives at At + Spread·i/n.
func (s *BurstSource) Next(r *Request) bool {
	if s.next >= s.b.Count {
		return false
	}
	offset := time.Duration(0)
	if s.b.Spread > 0 {
		hi, lo := bits.Mul64(uint64(s.b.Spread), uint64(s.next))
		q, _ := bits.Div64(hi, lo, uint64(s.b.Count)) // next < Count, so q < Spread: no overflow
		offset = time.Duration(q)
	}
	*r = Request{At: s.b.At + offset, Key: s.b.Key, Cost: s.b.Cost, Class: s.b.Class}
	s.next++
	return true
}

func (s *BurstSource) String() string {
	if s.b.Spread > 0 {
		return fmt.Sprintf("%d×%q at %s over %s", s.b.Count, s.b.Key, s.b.At, s.b.Spread)
	}
	return fmt.Sprintf("%d×%q at %s", s.b.Count, s.b.Key, s.b.At)
}
