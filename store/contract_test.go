package store

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
)

// The scripts' RetryAfter and Reset keep the limiter contract, to the µs: a refused
// request of the same cost passes RetryAfter later if nothing else is admitted, and not a
// µs sooner; a request of the whole capacity passes Reset later, and not a µs sooner.
// Each probe replays the trace up to the decision on a fresh model, then asks once.
func TestScriptsRetryAfterAndResetAreExact(t *testing.T) {
	base := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC).UnixNano()
	for seed := uint64(1); seed <= 6; seed++ {
		rng := rand.New(rand.NewPCG(seed, 13))
		p := randomPolicy(rng)
		type req struct{ at, cost int64 }
		var trace []req
		now := base + rng.Int64N(int64(p.Window))/1000*1000
		for range 60 {
			if rng.IntN(3) > 0 {
				now += rng.Int64N(int64(p.Window)/8) / 1000 * 1000
			}
			trace = append(trace, req{now, 1 + rng.Int64N(3)})
		}
		for _, alg := range Algorithms() {
			capacity := p.Limit
			if alg == "token-bucket" || alg == "gcra" {
				capacity = p.EffectiveBurst()
			}
			// decide replays trace[:n] on a fresh model, then decides cost at at.
			decide := func(n int, at, cost int64) Reply {
				lim, err := NewLimiter(NewModel(), alg, p, "rl:")
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range trace[:n] {
					if _, err := lim.Allow("u", Now(r.at), r.cost); err != nil {
						t.Fatal(err)
					}
				}
				r, err := lim.Allow("u", Now(at), cost)
				if err != nil {
					t.Fatal(err)
				}
				return r
			}
			what := fmt.Sprintf("%s %s seed %d", alg, p, seed)
			refused, reset := 0, 0
			for i, r := range trace {
				d := decide(i, r.at, r.cost)
				if d.Allowed != (d.RetryAfter == 0) || d.RetryAfter < 0 || d.Reset < 0 {
					t.Fatalf("%s step %d: %+v", what, i, d)
				}
				us := int64(time.Microsecond)
				if !d.Allowed && d.RetryAfter != algorithms.Never {
					refused++
					if !decide(i, r.at+int64(d.RetryAfter), r.cost).Allowed {
						t.Errorf("%s step %d: refused again RetryAfter %s later", what, i, d.RetryAfter)
					}
					if decide(i, r.at+int64(d.RetryAfter)-us, r.cost).Allowed {
						t.Errorf("%s step %d: admitted before RetryAfter %s", what, i, d.RetryAfter)
					}
				}
				if d.Reset > 0 {
					reset++
					if !decide(i+1, r.at+int64(d.Reset), capacity).Allowed {
						t.Errorf("%s step %d: not whole again Reset %s later", what, i, d.Reset)
					}
					if decide(i+1, r.at+int64(d.Reset)-us, capacity).Allowed {
						t.Errorf("%s step %d: whole before Reset %s", what, i, d.Reset)
					}
				}
			}
			if refused == 0 || reset == 0 {
				t.Errorf("%s: %d refusals, %d resets probed: the trace proves little", what, refused, reset)
			}
		}
	}
}
