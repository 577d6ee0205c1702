package cluster

import (
	"slices"
	"time"

	"github.com/rlsim/rlsim/report"
)

// timing is what the fleet's decisions waited for the store, and the breakers that
// spare them the wait. Fleet embeds it.
type timing struct {
	latency              histogram
	breakers             []breaker // per node, with Config.Breaker
	storeTimeouts        int64     // decisions that waited out the store client's timeout
	breakerOpenDecisions int64     // decisions an open breaker decided without the store
}

// fill puts the timing figures into d.
func (tm *timing) fill(d *report.Distributed) {
	h := &tm.latency
	ms := func(v time.Duration) float64 { return float64(v) / float64(time.Millisecond) }
	if h.n > 0 {
		d.AddedLatencyMeanMS = float64(h.sum) / float64(h.n) / float64(time.Millisecond)
	}
	d.AddedLatencyMaxMS = ms(h.max)
	d.AddedLatencyP50MS = ms(h.percentile(50))
	d.AddedLatencyP99MS = ms(h.percentile(99))
	d.StoreTimeouts = tm.storeTimeouts
	d.BreakerOpenDecisions = tm.breakerOpenDecisions
	for _, b := range tm.breakers {
		d.BreakerOpens += b.opens
	}
}

// histogram counts durations by value: exact percentiles in memory that grows with the
// number of distinct values, not of samples. A fleet's added latencies take a handful of
// values (no wait, one or two round trips, the store timeout), whatever the run's length.
type histogram struct {
	counts map[time.Duration]int64
	n      int64
	sum    time.Duration
	max    time.Duration
}

func (h *histogram) add(d time.Duration) {
	if h.counts == nil {
		h.counts = map[time.Duration]int64{}
	}
	h.counts[d]++
	h.n++
	h.sum += d
	h.max = max(h.max, d)
}

// percentile is the nearest-rank p-th percentile (0 < p ≤ 100): the smallest recorded
// value v such that at least ⌈p·n/100⌉ of the n values are ≤ v; 0 when nothing was
// recorded. Of 100 values of which 99 are 0, the 99th percentile is 0; of 100 of which
// 98 are 0, it is the larger value.
func (h *histogram) percentile(p int64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := (p*h.n + 99) / 100
	values := make([]time.Duration, 0, len(h.counts))
	for v := range h.counts {
		values = append(values, v)
	}
	slices.Sort(values)
	var seen int64
	for _, v := range values {
		seen += h.counts[v]
		if seen >= rank {
			return v
		}
	}
	return h.max
}
