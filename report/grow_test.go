package report

import "testing"

// A table that meets its keys one new id at a time doubles when full: over 100 000 ids
// it is copied at most 18 times (append's own growth, a quarter at a time past 256, copies
// it 28 times, allocating about twice as much), and every slot it hands out is empty,
// ids skipped over and slots a shorter table once held too.
func TestGrowDoublesAndHandsOutEmptySlots(t *testing.T) {
	var s []int64
	copies := 0
	for i := 0; i < 100000; i++ {
		before := cap(s)
		s = grow(s, i)
		if cap(s) != before {
			copies++
		}
		if len(s) != i+1 || s[i] != 0 {
			t.Fatalf("grow to %d: len %d, slot %d", i, len(s), s[i])
		}
		s[i] = int64(i) + 1
	}
	if copies > 18 {
		t.Errorf("100 000 ids one at a time: the table grew %d times, want at most 18", copies)
	}
	s = grow(s[:10], 14) // slots 10-14 held values once: a shorter table hands them out empty
	for i := 10; i <= 14; i++ {
		if s[i] != 0 {
			t.Fatalf("slot %d skipped over holds %d", i, s[i])
		}
	}
	if s[9] != 10 {
		t.Fatalf("slot 9 lost its value: %d", s[9])
	}
}
