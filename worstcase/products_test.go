package worstcase

import (
	"strings"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
)

// TestProductsWorstCases: the search reaches the models' own bounds where they are
// reached, and never goes above them. nginx's greedy client gets burst+1 at once and one
// more every 1/rate, plus the millisecond its clock gains: 31 in one second at 10r/s
// burst=20. HAProxy's periods follow from a key's first request, and primed-window-ends
// gets 2N through one period's length (ge N: 2(N−1)); with stricter search the curve stays
// at or below N·(⌈T/period⌉ + 1).
func TestProductsWorstCases(t *testing.T) {
	for _, c := range []struct {
		spec    string
		policy  algorithms.Policy
		want    int64
		foundBy string
	}{
		{"nginx:rate=10r/s burst=20 nodelay", algorithms.Policy{Limit: 10, Window: time.Second}, 31, ""},
		{"nginx:rate=10r/s burst=5 + rate=2r/s burst=3", algorithms.Policy{Limit: 2, Window: time.Second}, 6, ""},
		{"haproxy:period=10s gt=20", algorithms.Policy{Limit: 20, Window: 10 * time.Second}, 40, "primed-window-ends"},
		{"haproxy:period=1s ge=5", algorithms.Policy{Limit: 5, Window: time.Second}, 8, "primed-window-ends"},
	} {
		r := search(t, c.spec, c.policy, 0, 100, 1)
		if !r.Known || r.Worst.Peak != c.want || float64(r.Worst.Peak) != r.Bound.Value {
			t.Errorf("%s: found %d (bound %v, known %v) by %s, want %d", c.spec, r.Worst.Peak, r.Bound.Value, r.Known, r.FoundBy, c.want)
		}
		if c.foundBy != "" && !strings.HasPrefix(r.FoundBy, c.foundBy) {
			t.Errorf("%s: found by %s, want %s", c.spec, r.FoundBy, c.foundBy)
		}
		for _, T := range []time.Duration{c.policy.Window / 3, 5 * c.policy.Window / 2} {
			r := search(t, c.spec, c.policy, T, 50, 2)
			if float64(r.Worst.Peak) > r.Bound.Value {
				t.Errorf("%s at T = %v: found %d above the bound %v", c.spec, T, r.Worst.Peak, r.Bound.Value)
			}
		}
	}
}
