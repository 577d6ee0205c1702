package backoff

import (
	"math/rand/v2"
	"sync"
)

// The OCC model draws a normal variate for every hop, tens of millions in a sweep, with
// (*rand.Rand).NormFloat64: a ziggurat whose common case (97% of draws, measured) takes
// one Uint64 from the source, splits it into a strip i (bits 32–38) and a signed offset j
// (the low 32 bits), and returns j·w[i] when |j| < k[i]. What it costs is mostly the call
// through the rand.Source interface. normals takes that common case with the PCG generator
// called directly, and hands every other draw back to NormFloat64 from the generator's
// state before it, so the values are the same, draw for draw.
//
// The tables k and w are not copied from the standard library: they are read off
// NormFloat64 itself, by giving it a source that returns one chosen number (then zeros)
// and counting how many it took — one means the common case — and the tables so read are
// then checked against NormFloat64 on a seeded sequence. Should the standard library ever
// draw its normals another way, the check fails and every draw goes to NormFloat64.
type normals struct {
	k [128]uint32
	w [128]float64
}

// zigguratTables returns the tables read off NormFloat64, or nil when they do not
// reproduce it. It reads them once per process.
var zigguratTables = sync.OnceValue(func() *normals {
	z := new(normals)
	for i := range uint64(128) {
		// k[i] is the least |j| the common case refuses: the fast path accepts j iff
		// |j| < k[i], and j = 2^31 (MinInt32) is refused by every strip.
		lo, hi := uint64(0), uint64(1)<<31
		for lo < hi {
			mid := (lo + hi) / 2
			if _, one := probeNormal(i<<32 | mid); one {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		z.k[i] = uint32(lo)
		if lo > 1 {
			z.w[i], _ = probeNormal(i<<32 | 1) // 1·w[i]
		}
	}
	if !z.reproduces(1, 200_000) {
		return nil
	}
	return z
})

// oneThenZeros is a rand.Source returning first and then zeros, counting its calls.
type oneThenZeros struct {
	first uint64
	calls int
}

func (s *oneThenZeros) Uint64() uint64 {
	s.calls++
	if s.calls == 1 {
		return s.first
	}
	return 0
}

// probeNormal returns NormFloat64 over a source whose first number is u, and whether it
// took that one number alone.
func probeNormal(u uint64) (float64, bool) {
	src := &oneThenZeros{first: u}
	x := rand.New(src).NormFloat64()
	return x, src.calls == 1
}

// fast is the common case for the number u: j·w[i] and true, or false when the draw
// needs NormFloat64's other cases.
func (z *normals) fast(u uint64) (float64, bool) {
	j := int32(u)
	i := u >> 32 & 0x7f
	a := uint32(j)
	if j < 0 {
		a = uint32(-j)
	}
	if a < z.k[i] {
		return float64(j) * z.w[i], true
	}
	return 0, false
}

// draw returns the next normal variate of rng, whose source is pcg: NormFloat64's value.
// A nil z draws through NormFloat64 alone.
func (z *normals) draw(pcg *rand.PCG, rng *rand.Rand) float64 {
	if z == nil {
		return rng.NormFloat64()
	}
	before := *pcg
	if x, ok := z.fast(pcg.Uint64()); ok {
		return x
	}
	*pcg = before
	return rng.NormFloat64()
}

// reproduces reports whether draw gives NormFloat64's values and leaves the generator
// where it does, for n draws of a generator seeded with seed.
func (z *normals) reproduces(seed uint64, n int) bool {
	pcg, ref := rand.NewPCG(seed, seed), rand.NewPCG(seed, seed)
	rng, refRng := rand.New(pcg), rand.New(ref)
	for range n {
		if z.draw(pcg, rng) != refRng.NormFloat64() || *pcg != *ref {
			return false
		}
	}
	return true
}
