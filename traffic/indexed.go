package traffic

import (
	"strconv"
	"time"
)

// IndexedSource is a Source whose keys are the integers 0 … Keys()−1, named by KeyName.
// A runner that has many keys can take the integer straight from NextIndexed and skip
// building and hashing a string per request; it asks for the name only when it has to
// print one. NextIndexed and Next draw the same random numbers in the same order, so a
// run gets the same requests whichever it calls.
type IndexedSource interface {
	Source
	// NextIndexed fills r with the next request, leaving r.Key empty, and returns its
	// key's index; ok is false when the source is exhausted.
	NextIndexed(r *Request) (key int, ok bool)
	// KeyName returns the name of key index k, as Next would put in Request.Key.
	KeyName(k int) string
	// KeyPrefix is the part every key name starts with; the rest is the decimal index
	// without leading zeros.
	KeyPrefix() string
	// Keys is the number of key indexes.
	Keys() int
}

var _ IndexedSource = (*PoissonSource)(nil)

// NextIndexed implements IndexedSource; it draws exactly what Next draws.
func (s *PoissonSource) NextIndexed(r *Request) (int, bool) {
	if s.p.Rate <= 0 || s.p.Keys <= 0 {
		return 0, false
	}
	s.t += time.Duration(s.rng.ExpFloat64() / s.p.Rate * float64(time.Second))
	if s.t >= s.p.End {
		return 0, false
	}
	var k int
	if s.zipf != nil {
		k = int(s.zipf.Uint64())
	} else {
		k = s.rng.IntN(s.p.Keys)
	}
	*r = Request{At: s.t, Cost: s.p.Cost, Class: s.p.Class}
	return k, true
}

// KeyName implements IndexedSource.
func (s *PoissonSource) KeyName(k int) string { return s.p.KeyPrefix + strconv.Itoa(k) }

// KeyPrefix implements IndexedSource.
func (s *PoissonSource) KeyPrefix() string { return s.p.KeyPrefix }

// Keys implements IndexedSource.
func (s *PoissonSource) Keys() int { return s.p.Keys }
