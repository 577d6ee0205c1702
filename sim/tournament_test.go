package sim

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// A tournament whose entrants each hold one event must hand them out in exactly the order
// of a Queue holding the same events, whatever mix of FixMin and RemoveMin follows, at
// every size (a power of two or not, a single entrant), with many equal times.
func TestTournamentOrderMatchesQueue(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var tr Tournament
	for trial := range 300 {
		n := 1 + rng.IntN(70)
		if trial < 5 {
			n = trial + 1
		}
		var q Queue[int]
		var seq uint64
		tr.Reset(n)
		for i := range n {
			seq++
			at := time.Duration(rng.IntN(20))
			tr.Set(i, at, seq)
			q.Push(Item[int]{At: at, Seq: seq, Value: i})
		}
		tr.Init()
		for step := 0; q.Len() > 0; step++ {
			if tr.Len() != q.Len() {
				t.Fatalf("trial %d step %d: Len %d, queue %d", trial, step, tr.Len(), q.Len())
			}
			i, at := tr.Min()
			want := q.Min()
			if i != want.Value || at != want.At {
				t.Fatalf("trial %d (n=%d) step %d: Min = %d at %v, queue %d at %v", trial, n, step, i, at, want.Value, want.At)
			}
			if rng.IntN(8) == 0 {
				gotI, gotAt := tr.RemoveMin()
				q.Pop()
				if minI, minAt := tr.Min(); tr.Len() > 0 && (gotI != minI || gotAt != minAt) {
					t.Fatalf("trial %d step %d: RemoveMin returned %d at %v, Min is %d at %v", trial, step, gotI, gotAt, minI, minAt)
				}
				continue
			}
			seq++
			next := at + time.Duration(rng.IntN(20))
			gotI, gotAt := tr.FixMin(next, seq)
			want.At, want.Seq = next, seq
			q.FixMin()
			if minI, minAt := tr.Min(); gotI != minI || gotAt != minAt {
				t.Fatalf("trial %d step %d: FixMin returned %d at %v, Min is %d at %v", trial, step, gotI, gotAt, minI, minAt)
			}
		}
		if tr.Len() != 0 {
			t.Fatalf("trial %d: %d entrants left after the queue emptied", trial, tr.Len())
		}
	}
}

// Entrants at the same time leave by Seq, not by number.
func TestTournamentBreaksTiesBySeq(t *testing.T) {
	var tr Tournament
	tr.Reset(4)
	for i, seq := range []uint64{4, 2, 3, 1} {
		tr.Set(i, 10, seq)
	}
	tr.Init()
	var got []int
	for tr.Len() > 0 {
		i, _ := tr.Min()
		got = append(got, i)
		tr.RemoveMin()
	}
	if want := []int{3, 1, 2, 0}; !equalInts(got, want) {
		t.Fatalf("left in order %v, want %v", got, want)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestTournamentDoesNotAllocateOnceGrown(t *testing.T) {
	var tr Tournament
	seq := uint64(0)
	allocs := testing.AllocsPerRun(100, func() {
		tr.Reset(64)
		for i := range 64 {
			seq++
			tr.Set(i, time.Duration(i*7%13), seq)
		}
		tr.Init()
		for range 1000 {
			_, at := tr.Min()
			seq++
			tr.FixMin(at+5, seq)
		}
	})
	if allocs != 0 {
		t.Fatalf("a run of the tournament allocates %v times", allocs)
	}
}

// BenchmarkActors is one event of a simulation whose every actor has one event pending
// and reschedules itself when it runs (the backoff experiment's clients): the earliest
// put back later by a random gap, on a Queue (Min and FixMin) and on a Tournament.
func BenchmarkActors(b *testing.B) {
	const ngaps = 4096
	gaps := make([]time.Duration, ngaps)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range gaps {
		gaps[i] = time.Duration(15_000_000 + rng.IntN(10_000_000)) // 20 ms ± 5 ms
	}
	for _, actors := range []int{16, 190, 1024} { // 190: the sweep's most clients
		b.Run(fmt.Sprintf("sim.Queue/actors=%d", actors), func(b *testing.B) {
			var q Queue[int32]
			for i := range actors {
				q.Push(Item[int32]{At: gaps[i], Seq: uint64(i), Value: int32(i)})
			}
			seq := uint64(actors)
			for b.Loop() {
				e := q.Min()
				seq++
				e.At, e.Seq = e.At+gaps[seq%ngaps], seq
				q.FixMin()
			}
		})
		b.Run(fmt.Sprintf("Tournament/actors=%d", actors), func(b *testing.B) {
			var tr Tournament
			tr.Reset(actors)
			for i := range actors {
				tr.Set(i, gaps[i], uint64(i))
			}
			tr.Init()
			seq := uint64(actors)
			for b.Loop() {
				_, at := tr.Min()
				seq++
				tr.FixMin(at+gaps[seq%ngaps], seq)
			}
		})
	}
}

// Three actors, each with one event pending: every one that runs reschedules itself
// (the third after 15 ms, the others after 40 ms) until it has run twice.
func ExampleTournament() {
	var t Tournament
	t.Reset(3)
	var seq uint64
	for i, at := range []time.Duration{30, 10, 20} {
		seq++
		t.Set(i, at*time.Millisecond, seq)
	}
	t.Init()
	runs := make([]int, 3)
	i, at := t.Min()
	for t.Len() > 0 {
		fmt.Println("actor", i, "at", at)
		if runs[i]++; runs[i] == 2 {
			i, at = t.RemoveMin()
			continue
		}
		gap := 40 * time.Millisecond
		if i == 2 {
			gap = 15 * time.Millisecond
		}
		seq++
		i, at = t.FixMin(at+gap, seq)
	}
	// Output:
	// actor 1 at 10ms
	// actor 2 at 20ms
	// actor 0 at 30ms
	// actor 2 at 35ms
	// actor 1 at 50ms
	// actor 0 at 70ms
}
