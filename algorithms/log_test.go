package algorithms

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func logEntries(l *Log) []logEntry {
	var es []logEntry
	for i := range l.Len() {
		t, c := l.At(i)
		es = append(es, logEntry{t, c})
	}
	return es
}

func TestLogEmpty(t *testing.T) {
	var l Log
	l.Expire(100)
	if l.Len() != 0 || l.Sum() != 0 || l.Bytes() != 48 {
		t.Errorf("zero Log: Len %d, Sum %d, Bytes %d; want 0, 0, 48", l.Len(), l.Sum(), l.Bytes())
	}
	if _, _, ok := l.Oldest(); ok {
		t.Error("Oldest of an empty Log reports ok")
	}
	if _, _, ok := l.Newest(); ok {
		t.Error("Newest of an empty Log reports ok")
	}
	for _, i := range []int{-1, 0, 1} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("At(%d) of an empty Log did not panic", i)
				}
			}()
			l.At(i)
		}()
	}
}

func TestLogExpireIsInclusive(t *testing.T) {
	var l Log
	l.Push(10, 1)
	l.Push(10, 2)
	l.Push(20, 4)
	l.Expire(9)
	if l.Sum() != 7 {
		t.Fatalf("Expire(9) dropped entries at 10: Sum %d", l.Sum())
	}
	l.Expire(10) // the trailing window at now = 10+W excludes entries at exactly 10
	if got := logEntries(&l); !slices.Equal(got, []logEntry{{20, 4}}) || l.Sum() != 4 {
		t.Fatalf("after Expire(10): %v, Sum %d", got, l.Sum())
	}
	l.Expire(1000)
	if l.Len() != 0 || l.Sum() != 0 {
		t.Fatalf("after expiring everything: Len %d, Sum %d", l.Len(), l.Sum())
	}
}

// TestLogGrowsWhileWrapped fills a ring whose entries wrap around its end and checks that
// growing it keeps them in order.
func TestLogGrowsWhileWrapped(t *testing.T) {
	var l Log
	for i := range int64(4) {
		l.Push(i, 1)
	}
	l.Expire(1) // drops t = 0, 1; head moves to index 2
	l.Push(4, 1)
	l.Push(5, 1) // wraps to index 1: the ring is full again
	if l.Bytes() != 48+4*16 {
		t.Fatalf("Bytes %d before growing, want %d", l.Bytes(), 48+4*16)
	}
	l.Push(6, 1) // grows to 8
	want := []logEntry{{2, 1}, {3, 1}, {4, 1}, {5, 1}, {6, 1}}
	if got := logEntries(&l); !slices.Equal(got, want) {
		t.Fatalf("entries %v, want %v", got, want)
	}
	if l.Bytes() != 48+8*16 {
		t.Errorf("Bytes %d after growing, want %d", l.Bytes(), 48+8*16)
	}
	if ot, oc, _ := l.Oldest(); ot != 2 || oc != 1 {
		t.Errorf("Oldest = (%d, %d), want (2, 1)", ot, oc)
	}
	if nt, _, _ := l.Newest(); nt != 6 {
		t.Errorf("Newest t = %d, want 6", nt)
	}
	l.Clear()
	if l.Len() != 0 || l.Sum() != 0 || l.Bytes() != 48+8*16 {
		t.Errorf("after Clear: Len %d, Sum %d, Bytes %d (capacity kept)", l.Len(), l.Sum(), l.Bytes())
	}
}

// TestLogMatchesSlice runs random pushes and expiries against a plain slice.
func TestLogMatchesSlice(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	var l Log
	var model []logEntry
	var now int64
	for i := range 100000 {
		if rng.IntN(3) > 0 {
			now += rng.Int64N(5)
			cost := rng.Int64N(10)
			l.Push(now, cost)
			model = append(model, logEntry{now, cost})
		} else {
			cutoff := now - rng.Int64N(60)
			l.Expire(cutoff)
			for len(model) > 0 && model[0].t <= cutoff {
				model = model[1:]
			}
		}
		var sum int64
		for _, e := range model {
			sum += e.cost
		}
		if l.Len() != len(model) || l.Sum() != sum {
			t.Fatalf("op %d: Len %d Sum %d, want %d %d", i, l.Len(), l.Sum(), len(model), sum)
		}
		if i%97 == 0 && !slices.Equal(logEntries(&l), model) {
			t.Fatalf("op %d: entries differ from the model", i)
		}
	}
}

func TestLogWarmPushDoesNotAllocate(t *testing.T) {
	var l Log
	var now int64
	for range 100 {
		now++
		l.Push(now, 1)
	}
	allocs := testing.AllocsPerRun(10000, func() {
		now++
		l.Expire(now - 100)
		l.Push(now, 1)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per Expire+Push on a warm Log", allocs)
	}
}

// TestLogKeepsOneEntryInline follows a Log that holds one entry at a time, then two: no
// ring until the second, which moves both into one in push order.
func TestLogKeepsOneEntryInline(t *testing.T) {
	var l Log
	for i := range int64(10) {
		l.Expire(10*i - 5)
		l.Push(10*i, 3)
		if n, c, ok := l.Oldest(); !ok || n != 10*i || c != 3 || l.Len() != 1 || l.Sum() != 3 || l.Bytes() != 48 {
			t.Fatalf("push %d: Oldest (%d, %d, %v), Len %d, Sum %d, Bytes %d", i, n, c, ok, l.Len(), l.Sum(), l.Bytes())
		}
		if got, cost := l.upTo(10 * i); got != 1 || cost != 3 {
			t.Fatalf("push %d: upTo its own time = (%d, %d), want (1, 3)", i, got, cost)
		}
		if got, _ := l.upTo(10*i - 1); got != 0 {
			t.Fatalf("push %d: upTo before its time = %d entries", i, got)
		}
	}
	l.Push(95, 4)
	want := []logEntry{{90, 3}, {95, 4}}
	if got := logEntries(&l); !slices.Equal(got, want) || l.Sum() != 7 || l.Bytes() != 48+4*16 {
		t.Fatalf("after a second entry: %v, Sum %d, Bytes %d; want %v, 7, %d", got, l.Sum(), l.Bytes(), want, 48+4*16)
	}
	l.dropOldest(1, 3)
	if got := logEntries(&l); !slices.Equal(got, want[1:]) || l.Sum() != 4 {
		t.Fatalf("after dropping the oldest: %v, Sum %d", got, l.Sum())
	}
}
