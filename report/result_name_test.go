package report

import (
	"testing"
	"time"
)

// fleetResult is one algorithm's result on a fleet variant, with a timeline whose busiest
// key's window counts are windows, one a second.
func fleetResult(alg string, d Distributed, windows ...int64) Result {
	dd := d
	return Result{Algorithm: alg, Distributed: &dd, Timeline: &Timeline{Bin: time.Second, WindowAdmitted: windows}}
}

func fleetReport(results ...Result) *Report {
	return &Report{Scenario: "fleet", Seed: 3, Key: "user", Policy: Policy{Limit: 100, Window: Duration(time.Minute), Burst: 100}, Results: results}
}

func TestResultNameNamesTheVariant(t *testing.T) {
	for _, tt := range []struct {
		x    Result
		want string
	}{
		{Result{Algorithm: "gcra"}, "gcra"},
		{Result{Algorithm: "gcra", Distributed: &Distributed{}}, "gcra"},
		{Result{Algorithm: "gcra", Distributed: &Distributed{Variant: "local"}}, "gcra@local"},
	} {
		if got := ResultName(tt.x); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.x, got, tt.want)
		}
	}
}
