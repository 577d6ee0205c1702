package sim

// Salt names one kind of part an experiment derives seeds for (the runs of a retry
// experiment, the requests of an error mix), so that two kinds indexed alike still draw
// unrelated seeds.
type Salt uint64

const (
	// BackoffRunSalt derives the seed of one run of a retry experiment, indexed by
	// (client count, run).
	BackoffRunSalt Salt = 0x5851f42d4c957f2d
	// ErrorMixSalt derives the draw that fixes whether one request of an error mix is
	// malformed, indexed by (client, request).
	ErrorMixSalt Salt = 0x6a09e667f3bcc909
)

// golden is 2⁶⁴/φ, the odd constant of SplitMix64's increment and of Sibling's spread.
const golden = 0x9e3779b97f4a7c15

// Derive is the one derivation of a part's seed from an experiment's seed: a pure
// function of (seed, salt, hi, lo), so any part can be repeated alone, the same on every
// platform. It mixes seed with salt, folds in hi above lo (hi is shifted up 32 bits:
// indices below 2³² never collide), and mixes again. The bytes of every output drawn
// from a derived seed rest on this formula: it must never change (TestDeriveIsStable).
func Derive(seed uint64, salt Salt, hi, lo uint64) uint64 {
	return Mix(Mix(seed^uint64(salt)) ^ hi<<32 ^ lo)
}

// Sibling is the seed of the i-th (from 0) of several runs that share an experiment's
// seed but not its random draws: the fleet variants of one cluster scenario. It spreads
// them by the golden-ratio constant rather than by Derive, because the fleets' figures
// (crashes between INCR and EXPIRE, the random balancer) were measured with this
// spread; like Derive it must never change.
func Sibling(seed uint64, i int) uint64 {
	return seed ^ uint64(i+1)*golden
}

// Mix is SplitMix64's finaliser of x+φ64: a bijection of 64 bits whose every output bit
// depends on every input bit.
func Mix(x uint64) uint64 {
	x += golden
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
