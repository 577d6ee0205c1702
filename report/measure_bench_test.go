package report

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/traffic"
)

// BenchmarkCollectorObserve is the reference's cost per decision, 100/min, one request
// per microsecond: one hot key, and a million keys hit in Zipf order (mostly cache misses).
func BenchmarkCollectorObserve(b *testing.B) {
	for _, keys := range []int{1, 1_000_000} {
		name := "keys=1"
		if keys > 1 {
			name = "keys=1M"
		}
		b.Run(name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			ids := make([]uint32, 1<<16)
			zipf := rand.NewZipf(rng, 1.1, 1, uint64(keys-1))
			for i := range ids {
				ids[i] = uint32(zipf.Uint64())
			}
			c := NewCollector(100, time.Minute, time.Second)
			c.Reserve(keys)
			b.ReportAllocs()
			t := int64(0)
			i := 0
			for b.Loop() {
				t += 1000
				key := ids[i&(len(ids)-1)]
				// Decide as the exact sliding log would, so windows hold what a real
				// limiter lets in.
				d := algorithms.Decision{Allowed: c.windows.sum(c.windows.slot(key), 0) < c.limit}
				c.Observe(key, t, 1, traffic.Legit, d)
				i++
			}
		})
	}
}

func TestObserveDoesNotAllocate(t *testing.T) {
	c := NewCollector(10, time.Second, time.Second)
	now := int64(0)
	observe := func() {
		now += int64(time.Millisecond)
		key := uint32(now/int64(time.Millisecond)) % 8
		c.Observe(key, now, 1, traffic.Attacker, algorithms.Decision{Allowed: true, Delay: time.Duration(now % 3)})
	}
	for range 10000 { // every key's window and the backend queue reach their size
		observe()
	}
	if a := testing.AllocsPerRun(1000, observe); a != 0 {
		t.Fatalf("Observe allocates %v times per request", a)
	}
}
