package algorithms

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// allNames are the six algorithms and the notes' variants: every limiter New builds.
var allNames = append(append([]string{}, Defaults()...), "notes-sliding-window", "notes-token-bucket")

// TestAdmitDecidesAsAllow feeds one trace to two limiters of each algorithm, one through
// Allow and one through Admit (a third mixes the two, as a simulation does when only some
// requests' answers are read), in order and with stamps moved off true time, and
// requires the same Allowed and Delay at every request and the same state at the end.
func TestAdmitDecidesAsAllow(t *testing.T) {
	admitted, refused := map[string]int{}, map[string]int{}
	for pi, p := range propertyPolicies {
		for _, seed := range traceSeeds {
			ordered := traceFor(pi, seed)
			for _, d := range []int64{0, int64(p.Window) / 10, 2 * int64(p.Window)} {
				trace := ordered
				if d > 0 {
					trace = restamp(rand.New(rand.NewPCG(seed, uint64(d))), ordered, d, 0)
				}
				for _, name := range allNames {
					label := fmt.Sprintf("%v/seed %d/skew %v/%s", p, seed, time.Duration(d), name)
					byAllow, _ := New(name, p)
					byAdmit, _ := New(name, p)
					mixed, _ := New(name, p)
					admit, mixedAdmit := AdmitterOf(byAdmit), AdmitterOf(mixed)
					for i, a := range trace {
						want := byAllow.Allow(a.key, a.stamp, a.cost)
						ok, delay := admit.Admit(a.key, a.stamp, a.cost)
						if ok != want.Allowed || delay != want.Delay {
							t.Fatalf("%s: request %d: Admit (%v, %v), Allow (%v, %v)", label, i, ok, delay, want.Allowed, want.Delay)
						}
						if i%3 == 0 {
							ok, delay = mixedAdmit.Admit(a.key, a.stamp, a.cost)
						} else {
							got := mixed.Allow(a.key, a.stamp, a.cost)
							ok, delay = got.Allowed, got.Delay
						}
						if ok != want.Allowed || delay != want.Delay {
							t.Fatalf("%s: request %d: mixed Admit/Allow (%v, %v), Allow (%v, %v)", label, i, ok, delay, want.Allowed, want.Delay)
						}
						if ok {
							admitted[name]++
						} else {
							refused[name]++
						}
					}
					if !reflect.DeepEqual(byAdmit, byAllow) || !reflect.DeepEqual(mixed, byAllow) {
						t.Fatalf("%s: the state after Admit differs from the state after Allow", label)
					}
				}
			}
		}
	}
	for _, name := range allNames {
		if admitted[name] < 1000 || refused[name] < 1000 {
			t.Errorf("%s: admitted %d, refused %d: the traces do not exercise both outcomes", name, admitted[name], refused[name])
		}
	}
}

// TestAdmitDoesNotAllocate checks that a warm key costs no allocation per Admit.
func TestAdmitDoesNotAllocate(t *testing.T) {
	for _, name := range Defaults() {
		lim, _ := New(name, Policy{Limit: 100, Window: time.Second})
		admit := AdmitterOf(lim)
		now := epoch
		for range 1000 {
			now += int64(3 * ms)
			admit.Admit(0, now, 1)
		}
		allocs := testing.AllocsPerRun(1000, func() {
			now += int64(3 * ms)
			admit.Admit(0, now, 1)
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per Admit on a warm key", name, allocs)
		}
	}
}

// TestWindowIndexIsFloorDivision checks the remembered window against floorDiv around
// window edges, backwards steps and the ends of the int64 range.
func TestWindowIndexIsFloorDivision(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, w := range []int64{1, 3, int64(time.Second), int64(time.Minute), 7 << 40} {
		idx := windowIndex{window: w}
		probe := func(now int64) {
			if got, want := idx.of(now), floorDiv(now, w); got != want {
				t.Fatalf("window %d: of(%d) = %d, want %d", w, now, got, want)
			}
		}
		for _, now := range []int64{0, -1, 1, w - 1, w, w + 1, -w, -w - 1, -w + 1, -1 << 63, -1<<63 + 1, 1<<63 - 1, 1<<63 - 2, 0, w} {
			probe(now)
		}
		now := epoch
		for range 10000 {
			switch rng.IntN(4) {
			case 0:
				now -= rng.Int64N(2 * w)
			case 1:
				now = w*rng.Int64N(1000) + rng.Int64N(3) - 1
			default:
				now += rng.Int64N(w)
			}
			probe(now)
		}
	}
}
