package sim

import "math/rand/v2"

// Stream names one family of random sequences. Two streams given the same seed draw
// unrelated sequences, so experiments of different kinds sharing a seed do not share
// their randomness.
type Stream uint64

const (
	// RunStream is a scenario run's: its traffic, its fleets and the worst-case search.
	RunStream Stream = 0x9e3779b97f4a7c15
	// BackoffStream is the retry experiments' (rlsim backoff): network delays, the
	// strategies' jitter and the server's capacity.
	BackoffStream Stream = 0x2545f4914f6cdd1d
)

// NewRNG is the one constructor of the project's random sources: a PCG generator seeded
// by seed in stream. The same seed and stream always give the same sequence, on every
// platform.
func NewRNG(seed uint64, stream Stream) *rand.Rand {
	return rand.New(rand.NewPCG(seed, seed^uint64(stream)))
}
