package algorithms

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// TestGCRAMatchesRedisRate replays random traces against GCRA and against
// github.com/go-redis/redis_rate/v10's Lua script running on miniredis, whose TIME is set to
// the virtual clock before every call, and requires every decision to be the same.
//
// The script computes in float64 seconds since 2017 (about 2.8e8 s, so its rounding unit
// is about 60 ns) and carries tat from call to call, so it cannot decide exact ties the way
// exact arithmetic does. The traces avoid them rather than loosening the comparison:
// arrivals lie on a 10 µs grid, every policy's emission interval is a whole number of
// 10 µs, so an arrival is either exactly at its allowAt or at least 10 µs away from it, and
// the arrivals exactly at it are left out. RetryAfter and Reset are compared to within
// 1 µs; Remaining may be one more than redis_rate's (see below).
func TestGCRAMatchesRedisRate(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 2,600 Lua calls on miniredis")
	}
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { rdb.Close() })
	peer := redis_rate.NewLimiter(rdb)
	const grid = int64(10 * time.Microsecond)

	policies := []Policy{
		{Limit: 10, Window: time.Second},           // T = 100 ms
		{Limit: 5, Window: time.Second, Burst: 2},  // T = 200 ms
		{Limit: 60, Window: time.Minute, Burst: 5}, // T = 1 s
		{Limit: 4, Window: 10 * ms, Burst: 3},      // T = 2.5 ms
	}
	rng := rand.New(rand.NewPCG(13, 14))
	for pi, p := range policies {
		t.Run(p.String(), func(t *testing.T) {
			g := NewGCRA(p)
			burst := p.EffectiveBurst()
			limit := redis_rate.Limit{Rate: int(p.Limit), Burst: int(burst), Period: p.Window}
			meanGapSteps := int64(p.Window) / p.Limit * (burst + 3) / 4 / grid
			now := epoch
			var decided, admitted, ties int
			var worstRetry, worstReset time.Duration
			for decided < 650 {
				if rng.IntN(4) > 0 {
					now += grid * rng.Int64N(2*meanGapSteps)
				}
				key := uint32(rng.IntN(3))
				cost := 1 + rng.Int64N(burst+2)
				if g.allowAt(key, now, cost) == (instant{ns: now}) {
					ties++
					continue
				}
				m.SetTime(time.Unix(0, now))
				res, err := peer.AllowN(t.Context(), fmt.Sprintf("p%d:k%d", pi, key), limit, int(cost))
				if err != nil {
					t.Fatal(err)
				}
				d := g.Allow(key, now, cost)
				decided++
				if d.Allowed != (res.Allowed > 0) {
					t.Fatalf("arrival %d (key %d, +%v, cost %d): %+v, redis_rate %+v",
						decided, key, time.Duration(now-epoch), cost, d, res)
				}
				if d.Allowed {
					// redis_rate truncates diff/T, which float64 often puts a hair under a
					// whole number (always for a key that was idle): one less, never more.
					if r := d.Remaining - int64(res.Remaining); r < 0 || r > 1 {
						t.Errorf("arrival %d: Remaining %d, redis_rate %d", decided, d.Remaining, res.Remaining)
					}
					admitted++
				} else if d.RetryAfter != Never {
					worstRetry = max(worstRetry, (d.RetryAfter - res.RetryAfter).Abs())
				}
				worstReset = max(worstReset, (d.Reset - res.ResetAfter).Abs())
			}
			t.Logf("%d decided (%d admitted), %d ties left out; RetryAfter within %v, Reset within %v of redis_rate",
				decided, admitted, ties, worstRetry, worstReset)
			if admitted < decided/5 || admitted > decided*4/5 {
				t.Errorf("admitted %d of %d: the trace does not exercise both outcomes", admitted, decided)
			}
			if worstRetry > time.Microsecond || worstReset > time.Microsecond {
				t.Errorf("RetryAfter or Reset more than 1µs from redis_rate's")
			}
		})
	}
}

// allowAt returns the time from which a request of cost for key would be admitted, without
// deciding it.
func (g *GCRA) allowAt(key uint32, now, cost int64) instant {
	tat := instant{ns: now}
	if int(key) < len(g.tat) && tat.before(g.tat[key]) {
		tat = g.tat[key]
	}
	return g.clock.sub(g.clock.add(tat, g.clock.span(cost)), g.tolerance)
}
