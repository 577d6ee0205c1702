package worstcase

import (
	"reflect"
	"testing"
	"time"

	"github.com/rlsim/rlsim/sim"
)

// Find spends the full budget at T = W, reuses that search on the curve, and a quarter of
// the budget at every other T, drawing from one random source in that order.
func TestFindSearchesWFirstThenEachSpan(t *testing.T) {
	target := Target{Algorithm: "sliding-window", Policy: per100Minute, Epoch: epoch, T: 5 * time.Minute}
	spans := []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute}
	got, err := Find(target, 40, spans, sim.NewRNG(3, sim.RunStream))
	if err != nil {
		t.Fatal(err)
	}
	rng := sim.NewRNG(3, sim.RunStream)
	atW := target
	atW.T = time.Minute
	want := Findings{}
	if want.Worst, err = Search(atW, 40, rng); err != nil {
		t.Fatal(err)
	}
	for _, T := range spans {
		if T == time.Minute {
			want.Curve = append(want.Curve, want.Worst)
			continue
		}
		at := target
		at.T = T
		r, err := Search(at, 10, rng)
		if err != nil {
			t.Fatal(err)
		}
		want.Curve = append(want.Curve, r)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Find = %+v\nwant %+v", got, want)
	}
	if got.Worst.Target.T != time.Minute || got.Curve[0].Searched > 10 || got.Worst.Searched == 0 {
		t.Errorf("searched T=%s with %d candidates, 30s with %d", got.Worst.Target.T, got.Worst.Searched, got.Curve[0].Searched)
	}
}

// The cache searches each (target, budget, seed) once, with the run stream of its seed.
func TestCacheSearchesEachKeyOnce(t *testing.T) {
	var c Cache
	target := Target{Algorithm: "fixed-window", Policy: per100Minute, Epoch: epoch, T: time.Minute}
	v, err := c.OverAdmission(target, 20, 7)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Search(target, 20, sim.NewRNG(7, sim.RunStream))
	if err != nil {
		t.Fatal(err)
	}
	if v != r.OverAdmission() || v != 2 {
		t.Fatalf("cached %v, a search gives %v (fixed window: 2)", v, r.OverAdmission())
	}
	// A planted value proves the second call reads the cache rather than searching.
	c.found[cacheKey{target, 20, 7}] = 9
	if v, _ := c.OverAdmission(target, 20, 7); v != 9 {
		t.Errorf("second call searched again: %v", v)
	}
	if v, _ := c.OverAdmission(target, 20, 8); v != 2 || len(c.found) != 2 {
		t.Errorf("another seed: %v, %d entries", v, len(c.found))
	}
	bad := target
	bad.Algorithm = "nope"
	if _, err := c.OverAdmission(bad, 20, 7); err == nil || len(c.found) != 2 {
		t.Errorf("unknown algorithm: %v, %d entries", err, len(c.found))
	}
}
