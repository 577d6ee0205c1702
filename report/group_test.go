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

// The trailing window is half-open, (t−W, t]: a request exactly W after one admitted has
// the window to itself. At a limit of 1, requests of several keys exactly W apart are
// each allowed by the reference, through a group of several members and a collector
// alone; one a nanosecond short of W is refused.
func TestTrailingWindowIsHalfOpen(t *testing.T) {
	const window = int64(time.Minute)
	steps := []struct {
		t    int64
		want bool
	}{{0, true}, {window, true}, {2 * window, true}, {3*window - 1, false}, {4 * window, true}}
	for _, members := range []int{1, 3} {
		cols := make([]*Collector, members)
		for i := range cols {
			cols[i] = NewCollector(1, time.Minute, time.Second)
		}
		var g *Group
		if members > 1 {
			var err error
			if g, err = NewGroup(cols); err != nil {
				t.Fatal(err)
			}
		}
		for _, key := range []uint32{2, 9} {
			for i, s := range steps {
				allowed := s.want // each member admits what the reference allows
				var ref uint64
				if g != nil {
					var mask uint64
					if allowed {
						mask = 1<<members - 1
					}
					ref = g.Observe(key, s.t, 1, traffic.Legit, mask, make([]time.Duration, members))
				} else if cols[0].Observe(key, s.t, 1, traffic.Legit, algorithms.Decision{Allowed: allowed}) {
					ref = 1
				}
				for m := range members {
					if got := ref&(1<<m) != 0; got != s.want {
						t.Errorf("%d members, key %d, step %d (t = %s): member %d reference allowed %v, want %v", members, key, i, time.Duration(s.t), m, got, s.want)
					}
				}
			}
		}
		for m, c := range cols {
			if r := c.Result(fakeLimiter{}); r.FalseAllow != 0 || r.FalseReject != 0 || r.PeakWindowAdmitted != 1 {
				t.Errorf("%d members, member %d: false allows %d, false rejects %d, peak %d; want 0, 0, 1", members, m, r.FalseAllow, r.FalseReject, r.PeakWindowAdmitted)
			}
		}
	}
}
