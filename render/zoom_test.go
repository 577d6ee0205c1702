package render

import (
	"slices"
	"testing"
	"time"

	"github.com/rlsim/rlsim/render/chart"
	"github.com/rlsim/rlsim/report"
)

const second = int64(time.Second)

// The steps follow the busiest key exactly: up at each admission, down when an admission
// leaves the window W later (the window is (t−W, t], so at t+W it is gone).
func TestBusiestStepsFollowTheWindow(t *testing.T) {
	window := 10 * second
	admissions := []report.Admission{
		{T: 1 * second, Key: 1, Count: 3},  // a burst of 3 units at once (cost 3)
		{T: 2 * second, Key: 2, Count: 1},  // another key, never the busiest
		{T: 4 * second, Key: 1, Count: 5},  // cost 2
		{T: 11 * second, Key: 1, Count: 3}, // the first 3 left at 11 s: 2 held, cost 1
	}
	steps, peakAt, peakFrom := busiestSteps(admissions, window)
	want := []chart.Point{{X: 1, Y: 3}, {X: 2, Y: 3}, {X: 4, Y: 5}, {X: 11, Y: 3}, {X: 12, Y: 3}, {X: 14, Y: 1}, {X: 21, Y: 0}}
	if !slices.Equal(steps, want) {
		t.Errorf("steps %v\nwant  %v", steps, want)
	}
	if peakAt != 4*second || peakFrom != 1*second {
		t.Errorf("peak at %v from %v, want 4s from 1s", time.Duration(peakAt), time.Duration(peakFrom))
	}
}

func boundaryReport(admissions func(alg int) []report.Admission) *report.Report {
	r := &report.Report{Scenario: "edge", Policy: report.Policy{Limit: 100, Window: report.Duration(time.Minute), Burst: 100}}
	for alg, name := range []string{"fixed-window", "sliding-log"} {
		tl := &report.Timeline{Bin: 200 * time.Millisecond, Admitted: make([]int64, 600), Refused: make([]int64, 600),
			WindowAdmitted: make([]int64, 600), Admissions: admissions(alg)}
		over := float64(tl.Admissions[len(tl.Admissions)-1].Count) / 100
		r.Results = append(r.Results, report.Result{Algorithm: name, OverAdmission: over, Timeline: tl})
	}
	return r
}

// 100 at 59.9 s and 100 at 60.1 s: the fixed window's 200 take 200 ms of a 120 s run, so
// the window chart gets a zoom from 59.7 s to 60.3 s; the same rise spread over a minute
// gets none.
func TestBoundaryEventZoomsOnASliver(t *testing.T) {
	burst := func(at1, at2 float64) func(int) []report.Admission {
		return func(alg int) []report.Admission {
			var out []report.Admission
			for i := range 100 {
				out = append(out, report.Admission{T: int64(at1 * float64(second)), Key: 7, Count: int64(i + 1)})
			}
			if alg == 0 {
				for i := range 100 {
					out = append(out, report.Admission{T: int64(at2 * float64(second)), Key: 7, Count: int64(101 + i)})
				}
			}
			return out
		}
	}
	r := boundaryReport(burst(59.9, 60.1))
	e, ok := boundaryEvent(r)
	if !ok || e.From != int64(59.7*float64(second)) || e.To != int64(60.3*float64(second)) {
		t.Fatalf("event %v..%v (%v), want 59.7s..60.3s", time.Duration(e.From), time.Duration(e.To), ok)
	}
	zoom := zoomSeries(r, e)
	if len(zoom) != 2 || zoom[0].Points[0] != (chart.Point{X: 59.7, Y: 0}) || zoom[0].Points[len(zoom[0].Points)-1].Y != 200 ||
		zoom[1].Points[len(zoom[1].Points)-1].Y != 100 {
		t.Errorf("zoom %v", zoom)
	}
	if !slices.ContainsFunc(Figures(r), func(f *chart.Figure) bool { return f.Name == "window-zoom" }) {
		t.Error("no window-zoom figure")
	}
	if _, ok := boundaryEvent(boundaryReport(burst(10, 60))); ok {
		t.Error("a rise over 50 s of a two-minute run got a zoom")
	}
	kept := boundaryReport(burst(59.9, 60.1))
	kept.Results = kept.Results[1:] // no one broke the promise
	if _, ok := boundaryEvent(kept); ok {
		t.Error("a run that kept the promise got a zoom")
	}
}
