package worstcase

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
)

// epoch is 2026-01-01T10:00:00Z, the default t=0 of scenarios: minutes fall on the Unix
// clock's minute boundaries.
var epoch = time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC).UnixNano()

var per100Minute = algorithms.Policy{Limit: 100, Window: time.Minute}

func search(t *testing.T, alg string, p algorithms.Policy, T time.Duration, budget int, seed uint64) Result {
	t.Helper()
	r, err := Search(Target{Algorithm: alg, Policy: p, Epoch: epoch, T: T}, budget, rand.New(rand.NewPCG(seed, seed)))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestAcceptance is the acceptance at 100 per minute, T = W.
func TestAcceptance(t *testing.T) {
	got := map[string]Result{}
	for _, alg := range algorithms.Defaults() {
		got[alg] = search(t, alg, per100Minute, 0, 200, 1)
	}
	if p := got["fixed-window"].Worst.Peak; p != 200 {
		t.Errorf("fixed-window: found %d in one window, want 2·L = 200", p)
	}
	if p := got["sliding-log"].Worst.Peak; p != 100 {
		t.Errorf("sliding-log: found %d in one window, want exactly L = 100", p)
	}
	for _, alg := range []string{"token-bucket", "gcra"} {
		r := got[alg]
		if want := r.Bound.Value; float64(r.Worst.Peak) < 0.99*want {
			t.Errorf("%s: found %d, want within 1%% of b + r·T = %.0f", alg, r.Worst.Peak, want)
		}
	}
	// The two-counter window: a client that times its requests gets almost 2L through
	// (derived in docs/worstcase.md: the supremum is L·(1+T/W), never reached).
	if p := got["sliding-window"].Worst.Peak; p != 199 {
		t.Errorf("sliding-window: found %d, want 2L−1 = 199", p)
	}
}

// TestNeverAboveBound runs the search over several policies and window lengths and checks
// no algorithm admits more than its analytic bound — which would prove the bound wrong.
func TestNeverAboveBound(t *testing.T) {
	policies := []algorithms.Policy{
		per100Minute,
		{Limit: 10, Window: 7 * time.Second, Burst: 25}, // windows not aligned with the epoch
		{Limit: 30, Window: time.Second, Burst: 5},
	}
	for _, p := range policies {
		for _, frac := range []float64{0.3, 1, 2.5} {
			T := time.Duration(frac * float64(p.Window))
			for _, alg := range algorithms.Defaults() {
				r := search(t, alg, p, T, 60, 3)
				if max := r.Bound.MaxAdmitted(); r.Worst.Peak > max {
					t.Errorf("%s %s T=%s: found %d, above the bound %s = %.2f", alg, p, T, r.Worst.Peak, r.Bound.Formula, r.Bound.Value)
				}
				if r.Worst.Peak < p.Limit && T >= p.Window {
					t.Errorf("%s %s T=%s: found only %d, less than the limit any algorithm admits", alg, p, T, r.Worst.Peak)
				}
			}
		}
	}
}

// TestReportedPeakIsWhatTheEngineMeasures replays every result's schedule through a fresh
// limiter and counts the window by brute force.
func TestReportedPeakIsWhatTheEngineMeasures(t *testing.T) {
	for _, alg := range algorithms.Defaults() {
		r := search(t, alg, per100Minute, 0, 100, 5)
		lim, _ := algorithms.New(alg, per100Minute)
		var admitted []int64
		for _, b := range r.Schedule {
			for range b.Count {
				if lim.Allow(0, epoch+int64(b.At), 1).Allowed {
					admitted = append(admitted, int64(b.At))
				}
			}
		}
		if got := bruteForcePeak(admitted, int64(time.Minute)); got != r.Worst.Peak {
			t.Errorf("%s: search reports %d, a fresh run of its schedule admits %d in one window", alg, r.Worst.Peak, got)
		}
		if r.Worst.Admitted != int64(len(admitted)) || r.Worst.Requests != r.Schedule.Requests() {
			t.Errorf("%s: measure %+v disagrees with the replay (%d admitted of %d)", alg, r.Worst, len(admitted), r.Schedule.Requests())
		}
	}
}

func bruteForcePeak(times []int64, w int64) int64 {
	var peak int64
	for _, end := range times {
		var n int64
		for _, t := range times {
			if t > end-w && t <= end {
				n++
			}
		}
		peak = max(peak, n)
	}
	return peak
}

func TestBudgetZeroRunsOnlyTheStructuredAttacks(t *testing.T) {
	for _, alg := range algorithms.Defaults() {
		rng := rand.New(rand.NewPCG(9, 9))
		r, err := Search(Target{Algorithm: alg, Policy: per100Minute, Epoch: epoch}, 0, rng)
		if err != nil {
			t.Fatal(err)
		}
		s, _ := newSearcher(r.Target)
		attacks, _ := s.structured()
		if r.Searched != 0 || r.Structured != len(attacks) {
			t.Errorf("%s: %d structured and %d searched, want %d and 0", alg, r.Structured, r.Searched, len(attacks))
		}
		if strings.HasPrefix(r.FoundBy, "search") {
			t.Errorf("%s: found by %q with budget 0", alg, r.FoundBy)
		}
		// The local search is the only user of the random source: untouched, it draws
		// what a fresh one draws.
		if rng.Uint64() != rand.New(rand.NewPCG(9, 9)).Uint64() {
			t.Errorf("%s: budget 0 drew from the random source", alg)
		}
	}
}

func TestSearchStaysWithinBudget(t *testing.T) {
	r := search(t, "sliding-window", per100Minute, 0, 37, 1)
	if r.Searched > 37 || r.Searched == 0 {
		t.Fatalf("searched %d candidates with budget 37", r.Searched)
	}
}

func TestSameSeedSameResult(t *testing.T) {
	for _, alg := range []string{"sliding-window", "leaky-bucket"} {
		a := search(t, alg, per100Minute, 90*time.Second, 150, 42)
		b := search(t, alg, per100Minute, 90*time.Second, 150, 42)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: same seed, different results:\n%+v\n%+v", alg, a, b)
		}
	}
}

// TestLocalSearchImproves starts the search from a poor schedule only, so that what it
// finds is its own work: against a fixed window it must find more than one window's worth.
func TestLocalSearchImproves(t *testing.T) {
	s, err := newSearcher(Target{Algorithm: "fixed-window", Policy: per100Minute, Epoch: epoch})
	if err != nil {
		t.Fatal(err)
	}
	start, err := s.measure("uniform", Schedule{{At: 10 * time.Second, Count: 100}})
	if err != nil {
		t.Fatal(err)
	}
	best, n, err := s.localSearch([]candidate{start}, 400, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 || n > 400 {
		t.Fatalf("evaluated %d", n)
	}
	if best.measure.Peak <= 100 || !strings.HasPrefix(best.name, "search from") {
		t.Fatalf("local search from a single burst found %d (%s), want more than 100", best.measure.Peak, best.name)
	}
}

func TestCurveFollowsTheBounds(t *testing.T) {
	spans := []time.Duration{15 * time.Second, time.Minute, 2 * time.Minute}
	rs, err := Curve(Target{Algorithm: "fixed-window", Policy: per100Minute, Epoch: epoch}, spans, 50, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []int64{200, 200, 300} {
		if rs[i].Worst.Peak != want || rs[i].Target.T != spans[i] {
			t.Errorf("T=%s: found %d, want %d", spans[i], rs[i].Worst.Peak, want)
		}
	}
}

func TestBadTargets(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, tt := range []struct {
		target Target
		budget int
		want   string
	}{
		{Target{Algorithm: "nope", Policy: per100Minute}, 0, `unknown algorithm "nope"`},
		{Target{Algorithm: "gcra", Policy: algorithms.Policy{Limit: 0, Window: time.Second}}, 0, "limit must be positive"},
		{Target{Algorithm: "gcra", Policy: per100Minute, T: -time.Second}, 0, "T must be positive"},
		{Target{Algorithm: "gcra", Policy: per100Minute}, -1, "budget must not be negative"},
	} {
		if _, err := Search(tt.target, tt.budget, rng); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: error %v, want %q", tt.target, err, tt.want)
		}
	}
}

func TestBoundsAtOneWindow(t *testing.T) {
	p := algorithms.Policy{Limit: 100, Window: time.Minute, Burst: 40}
	for alg, want := range map[string]float64{
		"fixed-window": 200, "sliding-log": 100, "sliding-window": 200,
		"token-bucket": 140, "gcra": 140, "leaky-bucket": 140,
	} {
		b, ok := Target{Algorithm: alg, Policy: p}.Bound()
		if !ok || b.Value != want || b.Source == "" {
			t.Errorf("%s: bound %+v, want %.0f with a source", alg, b, want)
		}
	}
	if b := (Bound{Value: 200}); b.MaxAdmitted() != 199 {
		t.Errorf("an unreached 200 allows %d", b.MaxAdmitted())
	}
}

// FuzzPeakWindow checks the two-pointer sweep against brute force on arbitrary times.
func FuzzPeakWindow(f *testing.F) {
	f.Add([]byte{1, 5, 5, 9, 200}, uint16(10))
	f.Add([]byte{}, uint16(1))
	f.Fuzz(func(t *testing.T, gaps []byte, w uint16) {
		if w == 0 {
			return
		}
		times := make([]int64, len(gaps))
		var at int64
		for i, g := range gaps {
			at += int64(g)
			times[i] = at
		}
		got, _ := peakWindow(times, int64(w))
		if want := bruteForcePeak(times, int64(w)); got != want {
			t.Fatalf("sweep %d, brute force %d", got, want)
		}
	})
}
