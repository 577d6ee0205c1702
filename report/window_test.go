package report

import (
	"math/rand/v2"
	"testing"

	"github.com/rlsim/rlsim/algorithms"
)

// keyWindows must hold exactly what one algorithms.Log per key holds, whatever the mix of
// keys that stay inline and keys that spill into a ring.
func TestKeyWindowsMatchOneLogPerKey(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const keys = 64
	var w keyWindows
	logs := make([]algorithms.Log, keys)
	now := int64(0)
	for i := range 200000 {
		now += rng.Int64N(50)
		key := uint32(rng.IntN(keys))
		if key%4 == 0 { // a few busy keys spill, the rest mostly stay inline
			key = uint32(rng.IntN(4)) * 4
		}
		window := int64(1 + rng.IntN(2000))
		s := w.slot(key)
		w.expire(s, now-window)
		logs[key].Expire(now - window)
		if got, want := w.sum(s), logs[key].Sum(); got != want {
			t.Fatalf("step %d key %d: sum %d, one Log per key says %d", i, key, got, want)
		}
		if rng.IntN(3) > 0 {
			cost := 1 + rng.Int64N(3)
			w.push(s, now, cost)
			logs[key].Push(now, cost)
		}
	}
	if w.keys() != keys {
		t.Fatalf("keys = %d", w.keys())
	}
	spilled := 0
	for i := range w.slots {
		if w.slots[i].spill != 0 {
			spilled++
		}
	}
	if spilled == 0 || spilled == keys {
		t.Fatalf("%d of %d keys spilled; the test wants both kinds", spilled, keys)
	}
}

func TestKeyWindowsBytes(t *testing.T) {
	var w keyWindows
	s := w.slot(9) // ten slots, none spilled
	if got := w.bytes(); got != 10*24 {
		t.Fatalf("bytes = %d, want 240", got)
	}
	w.push(s, 1, 1)
	w.push(s, 2, 1) // spills into a ring of 4 entries
	var ring algorithms.Log
	ring.Push(1, 1)
	if got, want := w.bytes(), 10*24+ring.Bytes(); got != want {
		t.Fatalf("bytes = %d, want %d", got, want)
	}
}
