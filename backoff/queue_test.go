package backoff

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rlsim/rlsim/sim"
)

// TestOCCQueueOrdersLikeSimLoop checks the typed queue against sim.Loop's contract: events
// leave in time order, and events at the same time in the order they were scheduled.
func TestOCCQueueOrdersLikeSimLoop(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var q occQueue
	var loop sim.Loop
	var fromLoop []int32
	for i := range 2000 {
		at := time.Duration(rng.IntN(50)) * time.Millisecond // many ties
		q.push(at, int32(i))
		loop.At(at, sim.HandlerFunc(func(*sim.Loop) { fromLoop = append(fromLoop, int32(i)) }))
	}
	loop.Run(time.Hour)
	for i, want := range fromLoop {
		if e := q.pop(); e.client != want {
			t.Fatalf("event %d: queue gave client %d, sim.Loop %d", i, e.client, want)
		}
	}
	if len(q.items) != 0 {
		t.Fatalf("%d events left", len(q.items))
	}
}

// BenchmarkEventQueue compares the typed queue with sim.Loop on the OCC model's pattern:
// a client count of pending events, each popped event scheduling the next. The ratio of
// the two is what the typed queue is for.
func BenchmarkEventQueue(b *testing.B) {
	const pending = 100
	b.Run("typed", func(b *testing.B) {
		rng := rand.New(rand.NewPCG(1, 2))
		var q occQueue
		for i := range pending {
			q.push(time.Duration(rng.IntN(1000)), int32(i))
		}
		for b.Loop() {
			e := q.pop()
			q.push(e.at+time.Duration(rng.IntN(1000)), e.client)
		}
	})
	b.Run("sim.Loop", func(b *testing.B) {
		rng := rand.New(rand.NewPCG(1, 2))
		var loop sim.Loop
		n := 0
		var h sim.Handler
		h = sim.HandlerFunc(func(l *sim.Loop) {
			n++
			if n < b.N {
				l.After(time.Duration(rng.IntN(1000)), h)
			}
		})
		for range pending {
			loop.At(time.Duration(rng.IntN(1000)), h)
		}
		b.ResetTimer()
		loop.Run(1 << 62)
	})
}
