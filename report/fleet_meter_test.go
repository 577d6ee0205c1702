package report

import (
	"testing"
	"time"
)

func TestHistogramPercentiles(t *testing.T) {
	ms := time.Millisecond
	fill := func(values ...any) *histogram {
		h := &histogram{}
		for i := 0; i < len(values); i += 2 {
			for range values[i].(int) {
				h.add(values[i+1].(time.Duration))
			}
		}
		return h
	}
	for _, tc := range []struct {
		h        *histogram
		p50, p99 time.Duration
	}{
		{fill(), 0, 0},
		{fill(1, 7*ms), 7 * ms, 7 * ms},
		{fill(2, time.Duration(0), 1, 50*ms), 0, 50 * ms},  // rank ⌈2.97⌉ = 3, not 2
		{fill(99, time.Duration(0), 1, 50*ms), 0, 0},       // the 99th of 100 is still 0
		{fill(98, time.Duration(0), 2, 50*ms), 0, 50 * ms}, // now it is the timeout
		{fill(50, time.Duration(0), 50, ms), 0, ms},
		{fill(49, time.Duration(0), 51, ms), ms, ms},
		{fill(3, 2*ms, 5, 51*ms, 2, ms), 2 * ms, 51 * ms}, // the 5th of 1,1,2,2,2,51,… is 2
	} {
		if p50, p99 := tc.h.percentile(50), tc.h.percentile(99); p50 != tc.p50 || p99 != tc.p99 {
			t.Errorf("%v: p50 %s p99 %s, want %s and %s", tc.h.counts, p50, p99, tc.p50, tc.p99)
		}
	}
	// Memory grows with the distinct values, not with the samples.
	h := fill(100000, time.Duration(0), 100000, ms, 100000, 51*ms)
	if len(h.counts) != 3 || h.n != 300000 || h.max != 51*ms {
		t.Errorf("%d distinct values, %d samples, max %s", len(h.counts), h.n, h.max)
	}
}
