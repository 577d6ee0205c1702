package algorithms

import (
	"testing"
	"time"
)

func TestGCRATimeline(t *testing.T) {
	tests := []struct {
		name   string
		policy Policy
		steps  []step
	}{
		// T = 100 ms, burst offset 300 ms.
		{"10 per second burst 3", Policy{Limit: 10, Window: time.Second, Burst: 3}, []step{
			{at: 0, want: allowed(2, 100*ms)},
			{at: 0, cost: 2, want: allowed(0, 300*ms)},
			{at: 0, want: refused(0, 100*ms, 300*ms)},
			{at: 100 * ms, want: allowed(0, 300*ms)},
			{at: 150 * ms, want: refused(0, 50*ms, 250*ms)},
			{at: 150 * ms, cost: 4, want: refused(0, Never, 250*ms)},
			{at: 1 * time.Second, cost: 3, want: allowed(0, 300*ms)},
			{at: 1 * time.Second, key: 1, cost: 4, want: refused(3, Never, 0)},
		}},
		// T = 333333333⅓ ns: kept exactly, so three units take exactly one second.
		{"3 per second", Policy{Limit: 3, Window: time.Second}, []step{
			{at: 0, n: 3, admit: 3, want: allowed(0, time.Second)},
			{at: 0, want: refused(0, 333333334, time.Second)},
			{at: 333333333, want: refused(0, 1, 666666667)},
			{at: 333333334, want: allowed(0, time.Second)},
			{at: time.Second, cost: 3, want: refused(2, 333333334, 333333334)},
			{at: time.Second, cost: 2, want: allowed(0, time.Second)},
		}},
		{"boundary", Policy{Limit: 100, Window: time.Minute}, []step{
			{at: 59900 * ms, n: 100, admit: 100, want: allowed(0, time.Minute)},
			// One unit is 600 ms; the burst ran 60 s ahead at 59.9 s.
			{at: 60100 * ms, n: 100, admit: 0, want: refused(0, 400*ms, time.Minute-200*ms)},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runTimeline(t, NewGCRA(tt.policy), tt.steps)
		})
	}
}

func TestCellClock(t *testing.T) {
	c := newCellClock(Policy{Limit: 3, Window: time.Second})
	if got := c.span(1); got != (instant{ns: 333333333, frac: 1}) {
		t.Errorf("span(1) = %+v", got)
	}
	if got := c.add(c.add(c.span(1), c.span(1)), c.span(1)); got != (instant{ns: 1e9}) {
		t.Errorf("3·span(1) = %+v, want exactly 1s", got)
	}
	if got := c.sub(instant{ns: 1e9}, c.span(1)); got != (instant{ns: 666666666, frac: 2}) {
		t.Errorf("1s − span(1) = %+v", got)
	}
	if got := c.units(instant{}, instant{ns: 1e9}); got != 3 {
		t.Errorf("units(1s) = %d, want 3", got)
	}
	if got := c.units(instant{}, instant{ns: 1e9 - 1}); got != 2 {
		t.Errorf("units(1s − 1ns) = %d, want 2", got)
	}
	if got := c.units(instant{ns: 5}, instant{ns: 4}); got != 0 {
		t.Errorf("units of a negative span = %d, want 0", got)
	}
	if got := (instant{ns: 10, frac: 1}).until(5); got != 6 {
		t.Errorf("until rounds up: %v, want 6ns", got)
	}
	if got := (instant{ns: 10}).until(11); got != 0 {
		t.Errorf("until of the past = %v, want 0", got)
	}

	// Spans that do not fit 292 years saturate instead of wrapping.
	huge := newCellClock(Policy{Limit: 1, Window: time.Hour})
	if got := huge.span(1 << 40); got.ns != 1<<63-1 {
		t.Errorf("span(2^40 hours) = %+v, want saturated", got)
	}
	if got := huge.add(instant{ns: 1<<63 - 10}, huge.span(1)); got.ns != 1<<63-1 {
		t.Errorf("add near the end of time = %+v, want saturated", got)
	}
}

// TestGCRAHugeBurst checks that a policy whose burst offset does not fit an int64 of
// nanoseconds still decides without panicking or wrapping.
func TestGCRAHugeBurst(t *testing.T) {
	for _, name := range []string{"gcra", "leaky-bucket"} {
		lim, _ := New(name, Policy{Limit: 1, Window: time.Hour, Burst: 1 << 40})
		for i := range 3 {
			if d := lim.Allow(0, epoch, 1<<30); !d.Allowed {
				t.Errorf("%s: request %d refused: %+v", name, i, d)
			}
		}
	}
}
