package render

import (
	"fmt"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/render/chart"
	"github.com/rlsim/rlsim/worstcase"
)

// WorstCaseFigure is the curve of `rlsim worst-case`: per algorithm the most admitted in
// any window of length T against T, for one key at pol, with a caption that names the
// search budget, the seed and command, the command line that draws it again.
func WorstCaseFigure(runs []worstcase.Findings, pol algorithms.Policy, budget int, seed uint64, command string) *chart.Figure {
	var curves []chart.Series
	for _, r := range runs {
		s := chart.Series{Name: r.Worst.Target.Algorithm}
		for _, p := range r.Curve {
			s.Points = append(s.Points, chart.Point{X: p.Target.T.Seconds(), Y: float64(p.Worst.Peak)})
		}
		curves = append(curves, s)
	}
	return chart.WorstCaseFigure(chart.Meta{
		Title: fmt.Sprintf("Most admitted in any window of length T — one key, %d per %s, burst %d", pol.Limit, pol.Window, pol.EffectiveBurst()),
		Caption: fmt.Sprintf("engine measurements of the worst schedule found · search budget %d at T = W, %d at other T · seed %d\n%s",
			budget, budget/4, seed, command),
	}, curves, float64(pol.Limit), pol.Window)
}
