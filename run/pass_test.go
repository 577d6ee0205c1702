package run

import (
	"context"
	"encoding/csv"
	"errors"
	"io"
	"reflect"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/scenario"
	"github.com/rlsim/rlsim/sim"
	"github.com/rlsim/rlsim/traffic"
)

// The results must not depend on how the algorithms are spread over workers.
func TestParallelRunEqualsSequential(t *testing.T) {
	for _, name := range []string{"steady-poisson", "boundary-burst", "sliding-estimate"} {
		sc, err := scenario.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		if name == "steady-poisson" {
			sc.Duration = scenario.Duration(20 * time.Second)
		}
		want, err := Run(sc, Options{Workers: 1, Memory: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, workers := range []int{2, 3, 6, 64} {
			got, err := Run(sc, Options{Workers: workers, Memory: true})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: workers=%d gives\n%+v\nworkers=1 gives\n%+v", name, workers, got.Results, want.Results)
			}
		}
	}
}

func TestPassGroupsCoverEveryLimiterOnce(t *testing.T) {
	for n := 1; n <= 7; n++ {
		for workers := 0; workers <= 8; workers++ {
			for _, one := range []bool{false, true} {
				groups := passGroups(n, workers, one)
				next := 0
				for _, g := range groups {
					if g[0] != next || g[1] <= g[0] {
						t.Fatalf("n=%d workers=%d: groups %v", n, workers, groups)
					}
					next = g[1]
				}
				if next != n || (one && len(groups) != n) || (workers > 0 && !one && len(groups) > workers) {
					t.Fatalf("n=%d workers=%d one=%v: groups %v", n, workers, one, groups)
				}
			}
		}
	}
}

// Once every key's windows have reached their size, deciding a request allocates nothing:
// no string per key, no boxed event, no record per request.
func TestHotPathDoesNotAllocate(t *testing.T) {
	// Over the limit on every key, so every per-key window meets its bound within the
	// warm-up (below the limit a rare peak can still double a window later on).
	sc, err := scenario.Parse("hot.yaml", []byte(`name: hot
duration: 5m
policy: {limit: 4, window: 10s}
traffic:
  - poisson: {rate: 500, keys: 250, key_prefix: k}
  - script: [{at: 30s, count: 600, key: scripted, spread: 60s}]
`))
	if err != nil {
		t.Fatal(err)
	}
	pol := sc.Policy.Policy()
	var lims []algorithms.Limiter
	var cols []*report.Collector
	for _, name := range algorithms.Defaults() {
		lim, _ := algorithms.New(name, pol)
		lims = append(lims, lim)
		cols = append(cols, report.NewCollector(pol.Limit, pol.Window, time.Second))
	}
	p, err := newPass(sc, lims, cols, 1, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.takeTurns(passGroups(len(lims), 1, false))
	p.loop.Run(time.Minute) // every key has filled its windows
	until := p.loop.Now()
	before := p.loop.Fired()
	allocs := testing.AllocsPerRun(20, func() {
		until += 100 * time.Millisecond
		p.loop.Run(until)
	})
	if p.loop.Fired()-before < 500 {
		t.Fatalf("only %d requests ran", p.loop.Fired()-before)
	}
	if allocs != 0 {
		t.Fatalf("%v allocations per 100 ms of traffic (about 50 requests × 6 algorithms)", allocs)
	}
}

func TestKeySpaceNumbersGeneratedKeysAndUnifiesNames(t *testing.T) {
	src := func(prefix string, keys int) traffic.Source {
		return traffic.NewPoisson(traffic.Poisson{Rate: 1, Keys: keys, KeyPrefix: prefix, End: time.Second}, sim.NewRNG(1, sim.RunStream))
	}
	ks := newKeySpace([]traffic.Source{src("user_", 100), src("ip_", 10), src("user_", 200)})
	if ks.planned() != 210 {
		t.Fatalf("blocks plan %d keys, want 210", ks.planned())
	}
	// Ids come in order of first appearance, whether a key arrives by number or by name.
	if id := ks.blockID(ks.block("ip_"), 5); id != 0 {
		t.Fatalf("first key's id %d, want 0", id)
	}
	for _, tt := range []struct {
		name string
		want uint32
	}{
		{"user_17", 1}, {"ip_3", 2}, {"user_199", 3}, {"ip_5", 0},
		{"user_017", 4}, {"user_200", 5}, {"ip_x", 6}, {"user_17", 1}, {"user_017", 4}, {"user_", 7}, {"user_-1", 8},
	} {
		if got := ks.id(tt.name); got != tt.want {
			t.Errorf("id(%q) = %d, want %d", tt.name, got, tt.want)
		}
	}
	// "a_1"+"2" and "a_"+"12" name the same key: both prefixes fall back to names.
	ks = newKeySpace([]traffic.Source{src("a_", 100), src("a_1", 100)})
	if ks.blocks != nil {
		t.Fatalf("overlapping prefixes kept blocks %v", ks.blocks)
	}
	if a, b := ks.id("a_12"), ks.id("a_12"); a != 0 || b != 0 {
		t.Fatalf("ids %d %d", a, b)
	}
}

// What a run holds grows with its keys, not with its requests: twice the traffic over
// the same keys holds the same bytes. Per-key windows keep their high-water capacity,
// which the limit bounds; this traffic is over the limit everywhere, so every window
// meets its bound early (below the limit the high-water creeps up with rare peaks, in
// steps of a doubling, until it meets the same bound).
func TestMemoryGrowsWithKeysNotRequests(t *testing.T) {
	sc, err := scenario.Parse("mem.yaml", []byte(`name: mem
duration: 2m
policy: {limit: 4, window: 10s}
traffic:
  - poisson: {rate: 500, keys: 250, key_prefix: k}
`))
	if err != nil {
		t.Fatal(err)
	}
	held := func(d time.Duration) *report.Memory {
		sc.Duration = scenario.Duration(d)
		rep, err := Run(sc, Options{Memory: true})
		if err != nil {
			t.Fatal(err)
		}
		return rep.Memory
	}
	once, twice := held(30*time.Second), held(time.Minute)
	if once.Keys != 250 || twice.Keys != 250 {
		t.Fatalf("keys %d and %d, want 250", once.Keys, twice.Keys)
	}
	if r := float64(twice.Bytes) / float64(once.Bytes); r > 1.1 || r < 0.9 {
		t.Fatalf("twice the requests hold %.2f× the bytes (%d vs %d)", r, twice.Bytes, once.Bytes)
	}
}

func TestMillionKeysIsHeavyAndAsAdvertised(t *testing.T) {
	sc, err := scenario.Load("million-keys")
	if err != nil {
		t.Fatal(err)
	}
	p, ok := sc.Traffic[0].Spec.(*scenario.PoissonSpec)
	if !sc.Heavy || !ok || p.Keys != 1_000_000 || p.Popularity != "zipf" || len(sc.Algorithms) != 0 {
		t.Fatalf("million-keys: heavy=%v traffic=%+v algorithms=%v", sc.Heavy, p, sc.Algorithms)
	}
	if n := p.Rate * time.Duration(sc.Duration).Seconds(); n < 9.99e6 || n > 10.01e6 {
		t.Fatalf("million-keys asks for %.0f requests, want 10M", n)
	}
}

func TestTenMillionKeysIsHeavyAndAsAdvertised(t *testing.T) {
	sc, err := scenario.Load("ten-million-keys")
	if err != nil {
		t.Fatal(err)
	}
	p, ok := sc.Traffic[0].Spec.(*scenario.PoissonSpec)
	if !sc.Heavy || !ok || p.Keys != 10_000_000 || p.Popularity != "uniform" || len(sc.Algorithms) != 0 {
		t.Fatalf("ten-million-keys: heavy=%v traffic=%+v algorithms=%v", sc.Heavy, p, sc.Algorithms)
	}
	if n := p.Rate * time.Duration(sc.Duration).Seconds(); n < 9.99e6 || n > 10.01e6 {
		t.Fatalf("ten-million-keys asks for %.0f requests, want 10M", n)
	}
}

// A run whose context is done stops between two events with the context's cause, on one
// worker or several and with a decisions file; the loop never reaches the horizon.
func TestPassStopsWhenItsContextEnds(t *testing.T) {
	sc, err := scenario.Load("steady-poisson")
	if err != nil {
		t.Fatal(err)
	}
	stop := errors.New("stopped by the test")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(stop)
	for _, o := range []Options{
		{Workers: 1},
		{Workers: 3},
		{Workers: 2, Decisions: NewDecisionWriter(csv.NewWriter(io.Discard))},
	} {
		o.Context = ctx
		if rep, err := Run(sc, o); !errors.Is(err, stop) {
			t.Errorf("workers=%d decisions=%v: report %v, error %v; want %v", o.Workers, o.Decisions != nil, rep != nil, err, stop)
		}
	}
}
