package report

import (
	"math"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/traffic"
)

// The reference judges a request whose cost and the window's units sum past an int64 as
// refused: a limiter that admitted 2^62 units in a window (a user's limiter can) and a
// request of 1.5·2^62 more would sum to a negative int64, which is under any limit.
func TestReferenceDoesNotWrap(t *testing.T) {
	for _, members := range []int{1, 3} {
		cols := make([]*Collector, members)
		for i := range cols {
			cols[i] = NewCollector(algorithms.MaxUnits, time.Minute, time.Second)
		}
		var g *Group
		if members > 1 {
			var err error
			if g, err = NewGroup(cols); err != nil {
				t.Fatal(err)
			}
		}
		// observe has every member decide the request alike and returns the
		// reference's verdicts.
		observe := func(key uint32, t, cost int64, admitted bool) []bool {
			if g == nil {
				return []bool{cols[0].Observe(key, t, cost, traffic.Legit, algorithms.Decision{Allowed: admitted})}
			}
			var mask uint64
			if admitted {
				mask = 1<<members - 1
			}
			ref := g.Observe(key, t, cost, traffic.Legit, mask, make([]time.Duration, members))
			out := make([]bool, members)
			for i := range out {
				out[i] = ref&(1<<i) != 0
			}
			return out
		}
		for _, key := range []uint32{0, 5} {
			observe(key, 0, 1<<62, true)
			for i, ok := range observe(key, sec, 3<<61, false) {
				if ok {
					t.Errorf("%d members, key %d, member %d: the reference allowed 1.5·2^62 units on top of 2^62", members, key, i)
				}
			}
		}
		for i, c := range cols {
			r := c.Result(fakeLimiter{})
			if r.FalseReject != 0 || r.PeakWindowAdmitted != 1<<62 {
				t.Errorf("%d members, member %d: false rejects %d, peak %d; want 0 and 2^62", members, i, r.FalseReject, r.PeakWindowAdmitted)
			}
		}
	}
}

// A key's admitted units in a window and the units reaching the backend sum exactly up
// to a run's bound, 2^62, in a window held inline and in one that spilled to a ring.
func TestWindowSumsHoldARunsUnits(t *testing.T) {
	const quarter = 1 << 60
	for _, costs := range [][]int64{{1 << 62}, {quarter, quarter, quarter, quarter}} {
		c := NewCollector(algorithms.MaxUnits, time.Minute, time.Minute)
		for i, cost := range costs {
			c.Observe(7, int64(i)*sec, cost, traffic.Legit, algorithms.Decision{Allowed: true})
		}
		r := c.Result(fakeLimiter{})
		if r.PeakWindowAdmitted != 1<<62 || r.BackendPeak != 1<<62 || r.FalseAllow != int64(len(costs)) {
			t.Errorf("costs %v: peak %d, backend %d, false allows %d; want 2^62, 2^62, %d", costs, r.PeakWindowAdmitted, r.BackendPeak, r.FalseAllow, len(costs))
		}
		if want := math.Ldexp(1, 62) / algorithms.MaxUnits; r.OverAdmission != want {
			t.Errorf("costs %v: over-admission %v, want %v", costs, r.OverAdmission, want)
		}
	}
}

// The leaky bucket delays its k-th request of a burst by k emission intervals: at a
// window of 100000h and a limit of 100, a hundred requests are delayed by 1.8·10^19 ns
// in all, past an int64; their mean is 49.5 intervals.
func TestDelayMeanDoesNotWrap(t *testing.T) {
	p := algorithms.Policy{Limit: 100, Window: 100000 * time.Hour}
	lim, err := algorithms.New("leaky-bucket", p)
	if err != nil {
		t.Fatal(err)
	}
	c := NewCollector(p.Limit, p.Window, time.Second)
	for _, key := range []uint32{0, 1} {
		for range 100 {
			c.Observe(key, 0, 1, traffic.Legit, lim.Allow(key, 0, 1))
		}
	}
	r := c.Result(lim)
	interval := float64(p.Window) / float64(p.Limit) / float64(time.Millisecond)
	if r.Admitted != 200 || math.Abs(r.DelayMeanMS-49.5*interval) > 1e-9*interval || r.DelayMaxMS != 99*interval {
		t.Errorf("admitted %d, delay mean %v ms max %v ms; want 200, %v and %v", r.Admitted, r.DelayMeanMS, r.DelayMaxMS, 49.5*interval, 99*interval)
	}
}
