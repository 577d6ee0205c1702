package server

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/response"
)

// BenchmarkHeldBytesPerKey measures what a Handler holds per key (the key table and the
// limiter's state), as the live heap after a GC divided by the keys held: keys of 16 and
// of 256 bytes (the longest header value used as a key), under the two-counter window
// (24 bytes of state) and the sliding log at limit 100 (each key holding 100 entries).
// The figure is reported as bytes/key; b.N does not enter it.
func BenchmarkHeldBytesPerKey(b *testing.B) {
	const keys = 100_000
	for _, alg := range []string{"sliding-window", "sliding-log"} {
		for _, keyLen := range []int{16, 256} {
			b.Run(fmt.Sprintf("%s/key=%dB", alg, keyLen), func(b *testing.B) {
				for range b.N {
					b.ReportMetric(heldBytesPerKey(b, alg, keys, keyLen), "bytes/key")
				}
			})
		}
	}
}

func heldBytesPerKey(b *testing.B, alg string, keys, keyLen int) float64 {
	pol := algorithms.Policy{Limit: 100, Window: time.Minute}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	lim, _ := algorithms.New(alg, pol)
	now := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	h, err := New(Config{Limiter: lim, Policy: response.Policy{Name: "p", Policy: pol}, Key: "global", MaxKeys: keys,
		Now: func() time.Time { return now }})
	if err != nil {
		b.Fatal(err)
	}
	pad := strings.Repeat("k", keyLen-10)
	requests := 1
	if alg == "sliding-log" {
		requests = 100
	}
	for i := range keys {
		key := fmt.Sprintf("h:%s%08d", pad, i)
		for range requests {
			if v := h.decide(key, 1); v.full || !v.d.Allowed {
				b.Fatalf("key %d refused", i)
			}
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if h.Keys() != keys {
		b.Fatalf("%d keys held", h.Keys())
	}
	held := float64(after.HeapAlloc) - float64(before.HeapAlloc)
	runtime.KeepAlive(h)
	return held / float64(keys)
}
