package algorithms

import (
	"math/rand/v2"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

// benchPolicy is 10 per second: a key's sliding log holds at most 10 entries, so a
// million keys stay within a few hundred megabytes whatever -benchtime asks for.
var benchPolicy = Policy{Limit: 10, Window: time.Second}

// benchStep1Key spaces one key's requests 1.5 times faster than its rate (one per 100 ms),
// so both admissions and refusals are on the path measured.
const benchStep1Key = int64(67 * time.Millisecond)

// BenchmarkAllow measures one decision: /1key on a single warm key, /1Mkeys cycling over
// a million warm keys (each sees a request every 10 ms, well over its rate), so state comes
// from memory rather than cache.
func BenchmarkAllow(b *testing.B) {
	for _, name := range Names {
		b.Run(name+"/1key", func(b *testing.B) {
			lim, _ := New(name, benchPolicy)
			now := epoch
			b.ReportAllocs()
			for b.Loop() {
				now += benchStep1Key
				lim.Allow(0, now, 1)
			}
		})
		b.Run(name+"/1Mkeys", func(b *testing.B) {
			const keys = 1_000_000
			lim, _ := New(name, benchPolicy)
			now := epoch
			for key := range uint32(keys) {
				lim.Allow(key, now, 1)
			}
			var key uint32
			b.ReportAllocs()
			for b.Loop() {
				now += 10
				lim.Allow(key, now, 1)
				if key++; key == keys {
					key = 0
				}
			}
		})
	}
}

// BenchmarkAdmit is BenchmarkAllow through Admit: the decision alone, as a simulation
// pass takes it (through the Admitter interface), without what it tells the client.
// /random-gaps is /1key with gaps drawn from an exponential distribution whose mean is the
// time a whole burst takes to come back (1 s): whether the key has recovered fully varies
// from request to request in an order no branch predictor learns, as it does over the keys
// of a Zipf workload, where the hot keys never recover and the rest always have.
func BenchmarkAdmit(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	var gaps [4096]int64
	for i := range gaps {
		gaps[i] = int64(rng.ExpFloat64() * float64(time.Second))
	}
	for _, name := range Names {
		b.Run(name+"/1key", func(b *testing.B) {
			lim, _ := New(name, benchPolicy)
			admit := AdmitterOf(lim)
			now := epoch
			b.ReportAllocs()
			for b.Loop() {
				now += benchStep1Key
				admit.Admit(0, now, 1)
			}
		})
		b.Run(name+"/random-gaps", func(b *testing.B) {
			lim, _ := New(name, benchPolicy)
			admit := AdmitterOf(lim)
			now := epoch
			var i uint
			b.ReportAllocs()
			for b.Loop() {
				now += gaps[i%uint(len(gaps))]
				i++
				admit.Admit(0, now, 1)
			}
		})
		b.Run(name+"/1Mkeys", func(b *testing.B) {
			const keys = 1_000_000
			lim, _ := New(name, benchPolicy)
			admit := AdmitterOf(lim)
			now := epoch
			for key := range uint32(keys) {
				admit.Admit(key, now, 1)
			}
			var key uint32
			b.ReportAllocs()
			for b.Loop() {
				now += 10
				admit.Admit(key, now, 1)
				if key++; key == keys {
					key = 0
				}
			}
		})
	}
}

// BenchmarkXTimeRateAllowN is the peer of BenchmarkAdmit/token-bucket/1key and
// BenchmarkAllow/token-bucket/1key: one golang.org/x/time/rate Limiter on the same policy
// and arrivals. AllowN answers only whether the request passes, as Admit does.
func BenchmarkXTimeRateAllowN(b *testing.B) {
	lim := rate.NewLimiter(rate.Limit(float64(benchPolicy.Limit)/benchPolicy.Window.Seconds()), int(benchPolicy.Limit))
	now := epoch
	b.ReportAllocs()
	for b.Loop() {
		now += benchStep1Key
		lim.AllowN(time.Unix(0, now), 1)
	}
}
