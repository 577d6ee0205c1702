package sim

import (
	"strings"
	"testing"
	"time"
)

// Each check at its edge: the value on the bound passes, one nanosecond past it fails
// with an error that says what.
func TestClockBoundsAtTheirEdges(t *testing.T) {
	epoch := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	ns := time.Nanosecond
	tests := []struct {
		name string
		err  error
		want string // "" when the value must pass
	}{
		{"window 1ns", CheckWindow(ns), ""},
		{"window 0", CheckWindow(0), "must be positive, got 0s"},
		{"window -1ns", CheckWindow(-ns), "must be positive"},
		{"window MaxWindow", CheckWindow(MaxWindow), ""},
		{"window MaxWindow+1ns", CheckWindow(MaxWindow + ns), "longer than the longest window"},
		{"time EarliestTime", CheckTime(EarliestTime), ""},
		{"time EarliestTime-1ns", CheckTime(EarliestTime.Add(-ns)), "outside the years the virtual clock counts (1678 to 2261"},
		{"time LatestTime-1ns", CheckTime(LatestTime.Add(-ns)), ""},
		{"time LatestTime", CheckTime(LatestTime), "outside the years"},
		{"span 292 years", CheckSpan(EarliestTime, EarliestTime.Add(time.Duration(1<<63-1)-ns)), ""},
		{"span past 292 years", CheckSpan(EarliestTime, EarliestTime.Add(time.Duration(1<<63-1)).Add(ns)), "more than the 2562047h47m16.854775807s the virtual clock runs"},
		{"span ends too late", CheckSpan(epoch, LatestTime), "outside the years"},
		{"run from EarliestTime+5W", CheckRun(EarliestTime.Add(5*time.Minute), time.Hour, time.Minute), ""},
		{"run from EarliestTime+5W-1ns", CheckRun(EarliestTime.Add(5*time.Minute-ns), time.Hour, time.Minute), "5 windows of 1m0s before it fall before 1678"},
		{"run to LatestTime-5W-1ns", CheckRun(epoch, LatestTime.Add(-5*time.Minute-ns).Sub(epoch), time.Minute), ""},
		{"run to LatestTime-5W", CheckRun(epoch, LatestTime.Add(-5*time.Minute).Sub(epoch), time.Minute), "after it reach past 2261"},
		{"run with a window too long", CheckRun(epoch, time.Hour, MaxWindow+ns), "window " + (MaxWindow + ns).String() + " is longer"},
		{"run negative", CheckRun(epoch, -ns, time.Minute), "longer than the virtual clock runs"},
		{"run epoch too late", CheckRun(LatestTime, 0, time.Minute), "outside the years"},
	}
	for _, tt := range tests {
		switch {
		case tt.want == "" && tt.err != nil:
			t.Errorf("%s: %v", tt.name, tt.err)
		case tt.want != "" && (tt.err == nil || !strings.Contains(tt.err.Error(), tt.want)):
			t.Errorf("%s: error %v, want %q", tt.name, tt.err, tt.want)
		}
	}
}
