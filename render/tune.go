package render

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/rlsim/rlsim/render/chart"
	"github.com/rlsim/rlsim/tune"
)

// TuneFigure is the chart of `rlsim tune`: the Pareto front, one series per algorithm,
// legit refused against attacker admitted (against the backend's peak for traffic
// without attackers), with the recommendation as a series of its own; command, in the
// caption, is the command line that draws it again.
func TuneFigure(rep *tune.Report, command string) *chart.Figure {
	y := func(p tune.PointReport) float64 {
		if rep.Labelled && p.AttackerAdmitRate != nil {
			return *p.AttackerAdmitRate * 100
		}
		return float64(p.BackendPeak)
	}
	yLabel := "attacker requests admitted (%)"
	if !rep.Labelled {
		yLabel = "backend peak (requests per second)"
	}
	x := func(p tune.PointReport) float64 {
		if p.LegitRejectRate == nil {
			return 0
		}
		return *p.LegitRejectRate * 100
	}
	byAlg := map[string][]chart.Point{}
	var names []string
	for _, p := range rep.Front {
		if _, ok := byAlg[p.Algorithm]; !ok {
			names = append(names, p.Algorithm)
		}
		byAlg[p.Algorithm] = append(byAlg[p.Algorithm], chart.Point{X: x(p), Y: y(p)})
	}
	var series []chart.Series
	for _, n := range names {
		pts := byAlg[n]
		slices.SortFunc(pts, func(a, b chart.Point) int {
			if a.X != b.X {
				return cmp.Compare(a.X, b.X)
			}
			return cmp.Compare(a.Y, b.Y)
		})
		series = append(series, chart.Series{Name: n, Points: pts})
	}
	if r := rep.Recommended; r != nil {
		series = append(series, chart.Series{Name: "recommended: " + r.Spec + " by " + r.Key, Points: []chart.Point{{X: x(*r), Y: y(*r)}}})
	}
	return &chart.Figure{Name: "front", Meta: chart.Meta{
		Title:   fmt.Sprintf("tune %s: the Pareto front of %d candidates", rep.Sample, rep.Evaluated),
		Caption: fmt.Sprintf("%d requests · %s", rep.Requests, command),
	}, Panels: []chart.Panel{chart.LinePanel{XLabel: "legitimate requests refused (%)", YLabel: yLabel, Series: series, Markers: true}}}
}
