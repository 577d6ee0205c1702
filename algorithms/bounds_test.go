package algorithms

import (
	"strings"
	"testing"
	"time"
)

// A policy beyond MaxUnits is refused, so that no limiter is built whose counts could
// wrap: limit 6·10^18 and two requests of cost 5·10^18 would sum to 10^19, past an int64.
func TestPolicyBeyondMaxUnitsIsRefused(t *testing.T) {
	tests := []struct {
		p    Policy
		want string
	}{
		{Policy{Limit: 6e18, Window: time.Minute}, "limit must be at most 4503599627370496 (2^52), got 6000000000000000000"},
		{Policy{Limit: MaxUnits + 1, Window: time.Minute}, "limit must be at most 4503599627370496"},
		{Policy{Limit: 10, Window: time.Minute, Burst: MaxUnits + 1}, "burst must be at most 4503599627370496 (2^52), got 4503599627370497"},
		{Policy{Limit: MaxUnits, Window: time.Minute, Burst: MaxUnits}, ""},
	}
	for _, tt := range tests {
		for _, name := range allNames {
			_, err := New(name, tt.p)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("%s %v: %v", name, tt.p, err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("%s %v: error %v, want %s", name, tt.p, err, tt.want)
			}
		}
	}
}

// At the bound every limiter still counts exactly, in Allow and in Admit: a key filled
// to one unit below the limit refuses a cost of 2 and admits a cost of 1, and two halves
// fill it exactly. In float64 above 2^52, the sliding window's sum 2^53 − 1 + 2 would
// round down to the limit and pass. The window is the longest the clock handles, so that
// a unit takes over a nanosecond to refill: the token bucket, as x/time/rate does,
// admits a deficit worth less than a nanosecond's refill.
func TestLimitersCountExactlyAtMaxUnits(t *testing.T) {
	p := Policy{Limit: MaxUnits, Window: 100000 * time.Hour, Burst: MaxUnits}
	type req struct {
		key  uint32
		cost int64
		ok   bool
	}
	reqs := []req{
		{0, MaxUnits - 1, true}, {0, 2, false}, {0, 1, true}, {0, 1, false},
		{1, MaxUnits / 2, true}, {1, MaxUnits/2 + 1, false}, {1, MaxUnits / 2, true},
		{2, MaxUnits + 1, false}, {2, MaxUnits, true},
	}
	for _, name := range Defaults() {
		for _, admit := range []bool{false, true} {
			lim, err := New(name, p)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range reqs {
				var ok bool
				if admit {
					ok, _ = AdmitterOf(lim).Admit(r.key, epoch, r.cost)
				} else {
					ok = lim.Allow(r.key, epoch, r.cost).Allowed
				}
				if ok != r.ok {
					t.Errorf("%s (Admit %v): request %d (key %d, cost %d): admitted %v, want %v", name, admit, i, r.key, r.cost, ok, r.ok)
				}
			}
		}
	}
}
