package traffic

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"
)

// Popularity says how a generator picks among its keys.
type Popularity uint8

const (
	// Uniform picks every key with the same probability.
	Uniform Popularity = iota
	// Zipf picks key k with probability proportional to 1/(k+1)^s: a few hot keys and a
	// long tail, as real API traffic has.
	Zipf
)

// Poisson describes open-loop arrivals with exponential gaps.
type Poisson struct {
	// Rate is the mean number of requests per second over all keys.
	Rate float64
	// Keys is the number of distinct keys, named KeyPrefix0 … KeyPrefix(Keys−1).
	Keys      int
	KeyPrefix string
	// Popularity and ZipfS (> 1) choose the key of each request.
	Popularity Popularity
	ZipfS      float64
	// Start and End bound the arrivals to [Start, End).
	Start, End time.Duration
	Cost       int64
	Class      Class
}

// PoissonSource yields a Poisson stream.
type PoissonSource struct {
	p     Poisson
	rng   *rand.Rand
	zipf  *rand.Zipf
	t     time.Duration
	names []string
}

var _ Source = (*PoissonSource)(nil)

// NewPoisson returns a source drawing from rng, which the caller owns (one per run).
func NewPoisson(p Poisson, rng *rand.Rand) *PoissonSource {
	if p.Cost == 0 {
		p.Cost = 1
	}
	s := &PoissonSource{p: p, rng: rng, t: p.Start, names: make([]string, p.Keys)}
	if p.Popularity == Zipf {
		s.zipf = rand.NewZipf(rng, p.ZipfS, 1, uint64(p.Keys-1))
	}
	return s
}

// Next implements Source.
func (s *PoissonSource) Next(r *Request) bool {
	if s.p.Rate <= 0 || s.p.Keys <= 0 {
		return false
	}
	s.t += time.Duration(s.rng.ExpFloat64() / s.p.Rate * float64(time.Second))
	if s.t >= s.p.End {
		return false
	}
	var k int
	if s.zipf != nil {
		k = int(s.zipf.Uint64())
	} else {
		k = s.rng.IntN(s.p.Keys)
	}
	if s.names[k] == "" {
		s.names[k] = s.p.KeyPrefix + strconv.Itoa(k)
	}
	*r = Request{At: s.t, Key: s.names[k], Cost: s.p.Cost, Class: s.p.Class}
	return true
}

func (s *PoissonSource) String() string {
	pop := "uniform"
	if s.p.Popularity == Zipf {
		pop = fmt.Sprintf("zipf s=%g", s.p.ZipfS)
	}
	return fmt.Sprintf("poisson %g/s over %d keys (%s)", s.p.Rate, s.p.Keys, pop)
}
