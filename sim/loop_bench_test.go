package sim

import (
	"container/heap"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// ticker reschedules itself every gap until it has fired n times: the shape of a traffic
// source feeding the loop, with nothing else to do.
type ticker struct {
	gap  time.Duration
	left int
}

func (t *ticker) Fire(l *Loop) {
	t.left--
	if t.left > 0 {
		l.After(t.gap, t)
	}
}

// BenchmarkEventQueue is the bare cost of one event (schedule, pop, dispatch) with a
// given number of sources pending at once: the floor under every simulated request.
func BenchmarkEventQueue(b *testing.B) {
	for _, sources := range []int{1, 16, 1024} {
		b.Run(benchName(sources), func(b *testing.B) {
			b.ReportAllocs()
			var l Loop
			tickers := make([]ticker, sources)
			for i := range tickers {
				tickers[i] = ticker{gap: time.Duration(1000 + i), left: b.N/sources + 1}
				l.At(time.Duration(i), &tickers[i])
			}
			b.ResetTimer()
			l.Run(time.Duration(1<<62 - 1))
		})
	}
}

func benchName(sources int) string {
	switch sources {
	case 1:
		return "sources=1"
	case 16:
		return "sources=16"
	}
	return "sources=1024"
}

func TestSchedulingDoesNotAllocate(t *testing.T) {
	var l Loop
	tickers := make([]ticker, 64)
	for i := range tickers {
		tickers[i] = ticker{gap: time.Duration(7 + i%5), left: 1 << 30}
		l.At(time.Duration(i), &tickers[i])
	}
	l.Run(time.Microsecond) // let the queue reach its size
	until := l.Now()
	allocs := testing.AllocsPerRun(100, func() {
		until += 100 * time.Nanosecond
		l.Run(until)
	})
	if allocs != 0 {
		t.Fatalf("running events allocates %v times per 100 ns of virtual time", allocs)
	}
}

// The typed heap must pop in exactly (time, scheduling order), whatever the push order.
func TestQueueOrderMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	type fired struct {
		at  time.Duration
		seq int
	}
	var l Loop
	var got []fired
	var want []fired
	for i := range 5000 {
		at := time.Duration(rng.IntN(300))
		want = append(want, fired{at, i})
		l.At(at, HandlerFunc(func(l *Loop) { got = append(got, fired{l.Now(), i}) }))
	}
	slices.SortStableFunc(want, func(a, b fired) int { return int(a.at - b.at) })
	l.Run(time.Hour)
	if !slices.Equal(got, want) {
		t.Fatal("events ran out of (time, scheduling) order")
	}
}

// BenchmarkQueue is one pop and one push with 1024 items queued, on Queue and on
// container/heap holding the same items: the peer it replaced in the traffic generators.
func BenchmarkQueue(b *testing.B) {
	const pending = 1024
	gaps := make([]time.Duration, pending)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range gaps {
		gaps[i] = time.Duration(rng.IntN(1000))
	}
	b.Run("sim.Queue", func(b *testing.B) {
		b.ReportAllocs()
		var q Queue[int]
		for i := range pending {
			q.Push(Item[int]{At: gaps[i], Seq: uint64(i), Value: i})
		}
		seq := uint64(pending)
		for b.Loop() {
			it := q.Pop()
			it.At += gaps[seq%pending]
			seq++
			it.Seq = seq
			q.Push(it)
		}
	})
	b.Run("container-heap", func(b *testing.B) {
		b.ReportAllocs()
		var q refHeap
		for i := range pending {
			heap.Push(&q, Item[int]{At: gaps[i], Seq: uint64(i), Value: i})
		}
		seq := uint64(pending)
		for b.Loop() {
			it := heap.Pop(&q).(Item[int])
			it.At += gaps[seq%pending]
			seq++
			it.Seq = seq
			heap.Push(&q, it)
		}
	})
}
