package report

import (
	"reflect"
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

// A meter told a fleet's decisions fills in what the whole fleet and each node admitted
// for each key in any trailing window, during the store's outages too, the store round
// trips and waits, the faults, and the windows after membership changes and failovers.
func TestFleetMeterFillsTheFleetsFigures(t *testing.T) {
	const s = int64(time.Second)
	base := int64(1767261600) * s
	ms := time.Millisecond
	m := NewFleetMeter(10, 10*time.Second)
	m.After([]int64{base + 1*s}, []int64{base + 5*s})
	for _, d := range []FleetDecision{
		{Key: 0, Node: 0, Now: base, Cost: 3, Allowed: true, RoundTrips: 1, Added: ms},
		{Key: 0, Node: 1, Now: base + 1*s, Cost: 4, Allowed: true, RoundTrips: 1, Added: ms, Crashed: true},
		{Key: 0, Node: 0, Now: base + 2*s, Cost: 5, Allowed: true, RoundTrips: 2, Added: 2 * ms, LeasesOutstanding: 7},
		{Key: 0, Node: 2, Now: base + 3*s, Cost: 1, RoundTrips: 1, Added: ms},
		{Key: 1, Node: 1, Now: base + 4*s, Cost: 2, Allowed: true, InOutage: true, TimedOut: true, Added: 300 * ms},
		{Key: 1, Node: 1, Now: base + 5*s, Cost: 2, Allowed: true, InOutage: true, BreakerOpen: true, LeasesOutstanding: 3},
		{Key: 1, Node: 2, Now: base + 6*s, Cost: 1, InOutage: true},
		{Key: 0, Node: 0, Now: base + 12*s, Cost: 2, Allowed: true, RoundTrips: 1, Added: ms},
	} {
		m.Observe(&d)
	}
	var d Distributed
	m.Fill(&d)
	want := Distributed{
		// key 0: 3 + 4 + 5 in (−8 s, 2 s]; node 0 alone 3 + 5
		EffectiveLimit: 12, NodePeakWindowAdmitted: 8,
		// both keys were refused once: key 0 got 1.2 limits, key 1 0.4
		ClientShareMin: 0.4, ClientShareMax: 1.2,
		StoreRoundTripsTotal: 6, StoreRoundTrips: 6.0 / 8,
		LeasesOutstandingMax: 7,
		OutageAdmitted:       2, OutageRefused: 1, OutageOverAdmission: 0.4, OutageNodePeak: 4,
		Crashes: 1, StoreTimeouts: 1, BreakerOpenDecisions: 1,
		// 0, 0, 1, 1, 1, 1, 2, 300 ms
		AddedLatencyMeanMS: 306.0 / 8, AddedLatencyMaxMS: 300, AddedLatencyP50MS: 1, AddedLatencyP99MS: 300,
	}
	// in [1 s, 11 s): key 0's 12; in [5 s, 15 s): key 1's 2 + 2 at 5 s (by 12 s key 0's
	// window is (2 s, 12 s], which holds 2)
	want.MembershipOverAdmission, want.FailoverOverAdmission = 1.2, 0.4
	if !reflect.DeepEqual(d, want) {
		t.Errorf("filled\n%+v\nwant\n%+v", d, want)
	}
}

// A meter that was told nothing fills zeros, and no share for a fleet that refused no one.
func TestFleetMeterOfNothing(t *testing.T) {
	m := NewFleetMeter(10, time.Second)
	var d Distributed
	m.Fill(&d)
	if d.StoreRoundTrips != 0 || d.AddedLatencyMeanMS != 0 || d.EffectiveLimit != 0 || d.ClientShareMax != 0 {
		t.Errorf("%+v", d)
	}
	m.Observe(&FleetDecision{Key: 3, Node: 2, Now: 5, Cost: 4, Allowed: true})
	m.Fill(&d)
	if d.EffectiveLimit != 4 || d.NodePeakWindowAdmitted != 4 || d.ClientShareMin != 0 || d.ClientShareMax != 0 || d.StoreRoundTrips != 0 {
		t.Errorf("one admission, none refused: %+v", d)
	}
}
