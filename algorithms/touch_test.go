package algorithms

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestTouchChangesNoDecision decides the same requests twice for every default
// algorithm, once with a Touch of the next chunk's keys before each chunk (keys seen,
// keys not yet seen, and keys far beyond any held), and requires every decision, delay,
// key count and state size to be the same.
func TestTouchChangesNoDecision(t *testing.T) {
	p := Policy{Limit: 5, Window: time.Second, Burst: 3}
	for _, name := range Defaults() {
		plain, err := New(name, p)
		if err != nil {
			t.Fatal(err)
		}
		touched, _ := New(name, p)
		toucher, ok := touched.(Toucher)
		if !ok {
			t.Errorf("%s does not read ahead (Toucher)", name)
			continue
		}
		a, b := AdmitterOf(plain), AdmitterOf(touched)
		rng := rand.New(rand.NewPCG(1, 2))
		now := int64(0)
		const chunk = 64
		keys := make([]uint32, chunk)
		for round := range 200 {
			for i := range keys {
				keys[i] = uint32(rng.IntN(300 + round))
			}
			toucher.Touch(append(keys[:chunk:chunk], 1<<20, uint32(1<<32-1)))
			for i, k := range keys {
				now += int64(rng.IntN(int(20 * time.Millisecond)))
				at := now
				if i%7 == 0 {
					at -= int64(50 * time.Millisecond) // out of order, as merged logs are
				}
				cost := int64(1 + rng.IntN(2))
				ok1, d1 := a.Admit(k, at, cost)
				ok2, d2 := b.Admit(k, at, cost)
				if ok1 != ok2 || d1 != d2 {
					t.Fatalf("%s: round %d, key %d at %d: %v %v plain, %v %v after Touch", name, round, k, at, ok1, d1, ok2, d2)
				}
			}
		}
		if plain.Keys() != touched.Keys() || plain.StateBytes() != touched.StateBytes() {
			t.Errorf("%s: %d keys %d bytes plain, %d keys %d bytes after Touch", name, plain.Keys(), plain.StateBytes(), touched.Keys(), touched.StateBytes())
		}
	}
}
