package store

import (
	"context"
	"testing"
	"time"
)

// The used_memory model against its calibration: per client at limit 100 and 100000
// clients, and the sliding log's skiplist at 1000 members (126440 B measured, 20000
// clients) within 1%.
func TestModelUsedMemoryCalibration(t *testing.T) {
	for alg, want := range map[string]int64{
		"fixed-window": 138, "sliding-window": 276, "token-bucket": 170, "leaky-bucket": 170, "gcra": 149, "sliding-log": 3717,
	} {
		got, err := ModelUsedMemory(alg, 100)
		if err != nil || got != want {
			t.Errorf("ModelUsedMemory(%s, 100) = %d, %v; measured %d", alg, got, err, want)
		}
	}
	got, _ := ModelUsedMemory("sliding-log", 1000)
	if d := float64(got-126440) / 126440; d < -0.01 || d > 0.01 {
		t.Errorf("ModelUsedMemory(sliding-log, 1000) = %d; measured 126440", got)
	}
	// Kong's counters, measured with `rlsim memory --redis --load 100000` on the same server:
	// MEMORY USAGE 416 and 104 B a client, used_memory +617 and +154.
	for spec, want := range map[string][2]int64{
		"kong:second=5 minute=100 hour=1000 day=5000 policy=redis": {416, 617},
		"kong:minute=100 policy=redis":                             {104, 154},
	} {
		b, enc, err := ModelBytes(spec, 100)
		used, uerr := ModelUsedMemory(spec, 100)
		if err != nil || uerr != nil || b != want[0] || enc != "int" || used < want[1]-1 || used > want[1]+1 {
			t.Errorf("%s: ModelBytes %d %s %v, ModelUsedMemory %d %v; measured %d and %d", spec, b, enc, err, used, uerr, want[0], want[1])
		}
	}
	if _, _, err := ModelBytes("kong:minute=100", 100); err == nil {
		t.Error("Kong's policy=local keeps no keys in Redis: it has no model")
	}
	if _, err := ModelUsedMemory("nope", 100); err == nil {
		t.Error("an unknown algorithm has no model")
	}
}

// settle pauses until used_memory is back near where the measurements began, and no
// longer than settleMax; a context that ends stops it.
func TestSettle(t *testing.T) {
	const baseline = 2 << 20
	levels := []int64{3 << 20, 3 << 20, 3 << 20, baseline + 4096} // the tables shrink on the third tick
	var paused time.Duration
	h := MeasureHooks{Pause: func(d time.Duration) { paused += d }}
	read := 0
	used := func() (int64, error) { read++; return levels[min(read, len(levels))-1], nil }
	if err := settle(h, used, baseline); err != nil || paused != 3*settleStep || read != 4 {
		t.Errorf("settle: %v after %s paused, %d reads; want 3 steps, 4 reads", err, paused, read)
	}

	paused, read = 0, 0
	levels = []int64{3 << 20} // a busy server that never comes back
	if err := settle(h, used, baseline); err != nil || paused != settleMax {
		t.Errorf("settle on a server that never settles: %v after %s paused, want %s", err, paused, settleMax)
	}

	ctx, cancel := context.WithCancel(context.Background())
	h.Context = ctx
	h.Pause = func(time.Duration) { cancel() }
	if err := settle(h, used, baseline); err != context.Canceled {
		t.Errorf("settle after the context ended: %v", err)
	}

	paused, read = 0, 0
	if err := settle(MeasureHooks{}, used, baseline); err != nil || read != 0 {
		t.Errorf("settle without Pause read used_memory %d times (%v)", read, err)
	}
}

// A load that did not grow used_memory measured someone else's deletions, not its keys.
func TestUsedMemoryGrowthDisturbed(t *testing.T) {
	for _, c := range []struct {
		before, after int64
		want          float64
		disturbed     bool
	}{
		{1000, 3000, 20, false},
		{1000, 1001, 0.01, false},
		{1000, 1000, 0, true},
		{3000, 1000, 0, true},
	} {
		got, disturbed := usedMemoryGrowth(c.before, c.after, 100)
		if got != c.want || disturbed != c.disturbed {
			t.Errorf("usedMemoryGrowth(%d, %d, 100) = %v, %v; want %v, %v", c.before, c.after, got, disturbed, c.want, c.disturbed)
		}
	}
}
