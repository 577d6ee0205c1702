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

// TestCurveNeverFallsBelowWhatWasRun: where the search at a longer T found less than the
// schedule found at a shorter one admits, that schedule is measured at the longer T and
// taken (a window of 1m holds one of 30s), with Worst following the point at W; a curve
// that does not fall is left as it is.
func TestCurveNeverFallsBelowWhatWasRun(t *testing.T) {
	at := func(T time.Duration) Target {
		return Target{Algorithm: "fixed-window", Policy: per100Minute, Epoch: epoch, T: T}
	}
	edge := Schedule{{At: time.Minute - 1, Count: 100}, {At: time.Minute, Count: 100}}
	lone := Schedule{{At: 0, Count: 100}}
	mk := func(T time.Duration, s Schedule, by string) Result {
		m, err := at(T).Measure(s)
		if err != nil {
			t.Fatal(err)
		}
		return Result{Target: at(T), Worst: m, Schedule: s, FoundBy: by}
	}
	f := Findings{Worst: mk(time.Minute, lone, "lone")}
	f.Curve = []Result{mk(30*time.Second, edge, "edge-pair 1ns"), f.Worst, mk(2*time.Minute, lone, "lone")}
	if err := f.carry(); err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct {
		peak int64
		by   string
	}{{200, "edge-pair 1ns"}, {200, "edge-pair 1ns at T = 30s"}, {200, "edge-pair 1ns at T = 30s"}} {
		if c := f.Curve[i]; c.Worst.Peak != want.peak || c.FoundBy != want.by {
			t.Errorf("T = %s: %d by %q, want %d by %q", c.Target.T, c.Worst.Peak, c.FoundBy, want.peak, want.by)
		}
	}
	if f.Worst.Worst.Peak != 200 || f.Worst.Target.T != time.Minute {
		t.Errorf("Worst is %d at T = %s, want the curve's 200 at 1m", f.Worst.Worst.Peak, f.Worst.Target.T)
	}
	rising := Findings{Curve: []Result{mk(30*time.Second, lone, "lone"), mk(time.Minute, edge, "edge")}}
	before := rising.Curve[1]
	if err := rising.carry(); err != nil || !reflect.DeepEqual(rising.Curve[1], before) {
		t.Errorf("a rising curve changed: %+v (%v)", rising.Curve[1], err)
	}
}
