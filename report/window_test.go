package report

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rlsim/rlsim/algorithms"
)

// keyWindows must hold for each member exactly what one algorithms.Log per key and member
// holds, whatever the mix of keys that stay inline and keys that spill into a ring, of
// members that admit and members that do not, and of costs that fit a slot and costs that
// do not.
func TestKeyWindowsMatchOneLogPerKeyAndMember(t *testing.T) {
	for _, members := range []int{1, 3, 6, 33, 64} {
		rng := rand.New(rand.NewPCG(5, uint64(members)))
		const keys = 64
		w := newKeyWindows(members)
		logs := make([][]algorithms.Log, keys)
		for k := range logs {
			logs[k] = make([]algorithms.Log, members)
		}
		now := int64(0)
		for i := range 100000 {
			now += rng.Int64N(50)
			key := uint32(rng.IntN(keys))
			if key%4 == 0 { // a few busy keys spill, the rest mostly stay inline
				key = uint32(rng.IntN(4)) * 4
			}
			window := int64(1 + rng.IntN(2000))
			s := w.slot(key)
			if rng.IntN(10) == 0 { // a reader at an earlier time drops nothing
				cutoff := now - window - rng.Int64N(500)
				for m := range members {
					want := logs[key][m].Sum()
					for j := range logs[key][m].Len() {
						if t, c := logs[key][m].At(j); t <= cutoff {
							want -= c
						}
					}
					if got := w.sumAfter(s, m, cutoff); got != want {
						t.Fatalf("%d members, step %d key %d member %d: sumAfter %d, want %d", members, i, key, m, got, want)
					}
				}
			}
			w.expire(s, now-window)
			for m := range members {
				logs[key][m].Expire(now - window)
				if got, want := w.sum(s, m), logs[key][m].Sum(); got != want {
					t.Fatalf("%d members, step %d key %d member %d: sum %d, one Log per key says %d", members, i, key, m, got, want)
				}
			}
			if rng.IntN(3) > 0 {
				cost := 1 + rng.Int64N(3)
				if rng.IntN(1000) == 0 {
					cost = math.MaxUint32 + rng.Int64N(3) // too large for a slot
				}
				admitted := rng.Uint64() & (1<<members - 1)
				if members == 64 {
					admitted = rng.Uint64()
				}
				if rng.IntN(4) == 0 {
					admitted = 1<<members - 1 // all of them, as most often
				}
				if admitted == 0 {
					continue
				}
				w.push(s, now, cost, admitted)
				for m := range members {
					if admitted&(1<<m) != 0 {
						logs[key][m].Push(now, cost)
					}
				}
			}
		}
		if w.keys() != keys {
			t.Fatalf("keys = %d", w.keys())
		}
		spilled := 0
		for i := range w.slots {
			if r, _ := w.spilled(&w.slots[i]); r != nil {
				spilled++
			}
		}
		if spilled == 0 || spilled == keys {
			t.Fatalf("%d members: %d of %d keys spilled; the test wants both kinds", members, spilled, keys)
		}
	}
}

func TestKeyWindowsBytes(t *testing.T) {
	w := newKeyWindows(6)
	s := w.slot(9) // ten slots of 16 bytes, none spilled
	if got := w.bytes(); got != 10*16 {
		t.Fatalf("bytes = %d, want 160", got)
	}
	w.push(s, 1, 1, 0b111111)
	if got := w.bytes(); got != 10*16 {
		t.Fatalf("bytes with one entry inline = %d, want 160", got)
	}
	w.push(s, 2, 1, 0b1) // spills: a ring header of 32 bytes, 4 entries of 24, six sums of 8
	if got, want := w.bytes(), int64(10*16+32+4*24+6*8); got != want {
		t.Fatalf("bytes = %d, want %d", got, want)
	}
	if got := w.sum(s, 0) + 10*w.sum(s, 1); got != 2+10*1 {
		t.Fatalf("sums after the spill: member 0 %d, member 1 %d; want 2, 1", w.sum(s, 0), w.sum(s, 1))
	}
}

// One member's ring needs no mask: its entries take 16 bytes, as an algorithms.Log's do.
func TestKeyWindowsBytesOfOneMember(t *testing.T) {
	w := newKeyWindows(1)
	s := w.slot(0)
	w.push(s, 1, 1, 1)
	w.push(s, 2, 1, 1) // spills: a ring header of 32 bytes, 4 entries of 16, one sum of 8
	if got, want := w.bytes(), int64(16+32+4*16+8); got != want {
		t.Fatalf("bytes = %d, want %d", got, want)
	}
	for i := range int64(3) {
		w.push(s, 3+i, 1, 1) // the fifth entry doubles the ring; the old one is kept
	}
	if got, want := w.bytes(), int64(16+32+8*16+8+4*16); got != want || w.sum(s, 0) != 5 {
		t.Fatalf("bytes = %d, sum %d; want %d, 5", got, w.sum(s, 0), want)
	}
	// The next key to spill takes the outgrown ring instead of a new one.
	s = w.slot(1)
	w.push(s, 6, 1, 1)
	w.push(s, 7, 1, 1)
	if got, want := w.bytes(), int64(2*16+2*(32+8)+8*16+4*16); got != want || w.sum(s, 0) != 2 {
		t.Fatalf("bytes = %d, sum %d; want %d, 2", got, w.sum(s, 0), want)
	}
}

// Keys past the first block of spilled rings land in blocks of their own, each key
// keeping its own ring and sums.
func TestKeyWindowsSpillIntoBlocks(t *testing.T) {
	const keys = 3*spillBlockSize + 7
	w := newKeyWindows(2)
	for k := range uint32(keys) {
		s := w.slot(k)
		w.push(s, 1, int64(k%5)+1, 0b01)
		w.push(s, 2, int64(k%7)+1, 0b11)
	}
	if len(w.spills) != 4 || w.nspilled != keys {
		t.Fatalf("%d blocks, %d spilled keys", len(w.spills), w.nspilled)
	}
	for k := range uint32(keys) {
		s := w.slot(k)
		if a, b := w.sum(s, 0), w.sum(s, 1); a != int64(k%5+1+k%7+1) || b != int64(k%7+1) {
			t.Fatalf("key %d: sums %d, %d", k, a, b)
		}
		w.expire(s, 1)
		if a, b := w.sum(s, 0), w.sum(s, 1); a != int64(k%7+1) || b != int64(k%7+1) {
			t.Fatalf("key %d after expiring the first entry: sums %d, %d", k, a, b)
		}
	}
	if got, want := w.bytes(), int64(keys*(16+32+2*8+4*24)); got != want {
		t.Fatalf("bytes = %d, want %d", got, want)
	}
}

// Touching keys reads their windows and changes nothing: not the windows, not the table
// (keys beyond it are skipped rather than given slots).
func TestKeyWindowsTouchChangesNothing(t *testing.T) {
	w := newKeyWindows(3)
	w.push(w.slot(2), 5, 1, 0b011)
	w.push(w.slot(2), 6, 2, 0b110)
	w.push(w.slot(4), 7, 1, 0b001)
	before := append([]windowSlot(nil), w.slots...)
	bytes := w.bytes()
	w.touch([]uint32{4, 2, 0, 9, 1 << 30, 2})
	if w.keys() != 5 || w.bytes() != bytes {
		t.Fatalf("after touch: %d slots, %d bytes; want 5, %d", w.keys(), w.bytes(), bytes)
	}
	for i := range before {
		if w.slots[i] != before[i] {
			t.Fatalf("slot %d changed by touch: %+v, was %+v", i, w.slots[i], before[i])
		}
	}
	for m, want := range []int64{1, 3, 2} {
		if got := w.sum(w.slot(2), m); got != want {
			t.Fatalf("member %d's sum of key 2 after touch = %d, want %d", m, got, want)
		}
	}
}
