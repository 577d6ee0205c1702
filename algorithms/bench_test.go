package algorithms

import (
	"math/rand/v2"
	"strings"
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
	for _, name := range Defaults() {
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
// /hot-and-cold is a Zipf workload in small: half the requests go to one hot key, over its
// rate as in /1key, the others to one of 4095 cold keys, each of which has fully recovered
// by the time it is asked again, in an order no branch predictor learns. A shortcut that
// only a hot key takes is paid for there.
func BenchmarkAdmit(b *testing.B) {
	for _, name := range Defaults() {
		benchAdmit(b, name, name)
	}
}

var hotAndCold = func() (keys [8192]uint32) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range keys {
		if rng.IntN(2) == 1 {
			keys[i] = 1 + rng.Uint32N(4095)
		}
	}
	return keys
}()

// benchAdmit runs BenchmarkAdmit's three workloads on the limiter spec names, as label.
func benchAdmit(b *testing.B, spec, label string) {
	b.Run(label+"/1key", func(b *testing.B) {
		lim, _ := New(spec, benchPolicy)
		admit := AdmitterOf(lim)
		now := epoch
		b.ReportAllocs()
		for b.Loop() {
			now += benchStep1Key
			admit.Admit(0, now, 1)
		}
	})
	b.Run(label+"/hot-and-cold", func(b *testing.B) {
		lim, _ := New(spec, benchPolicy)
		admit := AdmitterOf(lim)
		now := epoch
		var i uint
		b.ReportAllocs()
		for b.Loop() {
			now += benchStep1Key / 2
			admit.Admit(hotAndCold[i%uint(len(hotAndCold))], now, 1)
			i++
		}
	})
	b.Run(label+"/1Mkeys", func(b *testing.B) {
		const keys = 1_000_000
		lim, _ := New(spec, benchPolicy)
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

// benchProducts are the products' models at benchPolicy's 10 per second, each beside the
// textbook algorithm it is nearest to, for BenchmarkAdmitProducts.
var benchProducts = []struct{ spec, peer string }{
	// nginx after GCRA, whose admissions its leaky bucket follows, and after the leaky
	// bucket, which reports a delay as nginx without nodelay does; HAProxy after the
	// two-counter sliding window.
	{"nginx:rate=10r/s burst=10 nodelay", GCRAName},
	{"nginx:rate=10r/s burst=10", LeakyBucketName},
	{"nginx:rate=10r/s burst=10 nodelay + rate=2r/s burst=20 nodelay", GCRAName},
	{"haproxy:period=1s gt=10", SlidingWindowName},
	{"envoy-local:max_tokens=10 tokens_per_fill=10 fill_interval=1s version=1.30", TokenBucketName},
	{"envoy-local:max_tokens=10 tokens_per_fill=10 fill_interval=1s", GCRAName},
	{"envoy-ratelimit:unit=second requests_per_unit=10", FixedWindowName},
	{"kong:second=10", FixedWindowName},
	{"kong:second=10 minute=600 hour=36000", FixedWindowName},
	{"traefik:average=10 burst=10", TokenBucketName},
	{"aws-apigateway:rate=10 burst=10", TokenBucketName},
	{"spring-gateway:replenishRate=10 burstCapacity=10", TokenBucketName},
	{"express-rate-limit:windowMs=1000 limit=10", FixedWindowName},
	{"rate-limiter-flexible:points=10 duration=1", FixedWindowName},
}

// BenchmarkAdmitProducts is BenchmarkAdmit for each product's model, each run right
// after its nearest textbook algorithm (…/peer=NAME/…) on the same arrivals, so that the
// two read as a ratio measured at the same moment of a shared machine.
func BenchmarkAdmitProducts(b *testing.B) {
	for _, bp := range benchProducts {
		name := strings.ReplaceAll(bp.spec, " ", ",")
		benchAdmit(b, bp.peer, name+"/peer="+bp.peer)
		benchAdmit(b, bp.spec, name)
	}
}
