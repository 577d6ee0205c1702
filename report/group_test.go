package report

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/traffic"
)

// A group's collectors must report exactly what the same collectors report alone, told
// the same decisions: counts, verdicts, peaks, delays, the backend and the timeline.
func TestGroupMeasuresAsCollectorsAlone(t *testing.T) {
	for _, members := range []int{1, 2, 6, 40} {
		rng := rand.New(rand.NewPCG(7, uint64(members)))
		const limit, window, keys = 5, 10 * time.Second, 40
		horizon := 10 * time.Minute
		alone := make([]*Collector, members)
		grouped := make([]*Collector, members)
		for i := range members {
			alone[i] = NewCollector(limit, window, time.Second)
			grouped[i] = NewCollector(limit, window, time.Second)
			alone[i].RecordTimeline(horizon)
			grouped[i].RecordTimeline(horizon)
		}
		g, err := NewGroup(grouped)
		if err != nil {
			t.Fatal(err)
		}
		// Each member admits with its own leniency, so their windows differ.
		leniency := make([]int, members)
		for i := range leniency {
			leniency[i] = 3 + rng.IntN(7)
		}
		delays := make([]time.Duration, members)
		now := int64(0)
		for step := range 30000 {
			now += rng.Int64N(int64(40 * time.Millisecond))
			if rng.IntN(500) == 0 {
				now += int64(window) // a quiet stretch: bins pass with no decision
			}
			key := uint32(rng.IntN(keys))
			if rng.IntN(3) == 0 {
				key = 0 // a busy key
			}
			cost := 1 + rng.Int64N(3)
			class := traffic.Class(rng.IntN(3))
			var admitted uint64
			var want uint64
			for i := range members {
				allowed := rng.IntN(10) < leniency[i]
				delays[i] = 0
				if allowed {
					admitted |= 1 << i
					if i%3 == 2 {
						delays[i] = time.Duration(rng.Int64N(int64(time.Second)))
					}
				}
				if alone[i].Observe(key, now, cost, class, algorithms.Decision{Allowed: allowed, Delay: delays[i]}) {
					want |= 1 << i
				}
			}
			if got := g.Observe(key, now, cost, class, admitted, delays); got != want {
				t.Fatalf("%d members, step %d: verdicts %b, alone %b", members, step, got, want)
			}
		}
		for i := range members {
			got, want := grouped[i].Result(fakeLimiter{}), alone[i].Result(fakeLimiter{})
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%d members, member %d: grouped\n%+v\nalone\n%+v", members, i, got, want)
			}
			if want.FalseAllow == 0 || want.FalseReject == 0 || want.PeakWindowAdmitted <= limit {
				t.Fatalf("member %d: %+v: the decisions do not exercise the reference", i, want)
			}
		}
	}
}

func TestNewGroupRefusesMixedPromises(t *testing.T) {
	a := NewCollector(5, time.Second, time.Second)
	if _, err := NewGroup([]*Collector{a, NewCollector(6, time.Second, time.Second)}); err == nil {
		t.Error("a group of 5/s and 6/s was made")
	}
	if _, err := NewGroup(nil); err == nil {
		t.Error("an empty group was made")
	}
	b := NewCollector(5, time.Second, time.Second)
	b.Observe(0, 0, 1, traffic.Legit, algorithms.Decision{Allowed: true})
	if _, err := NewGroup([]*Collector{NewCollector(5, time.Second, time.Second), b}); err == nil {
		t.Error("a collector that had observed joined a group")
	}
}
