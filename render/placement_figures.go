package render

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/rlsim/rlsim/render/chart"
	"github.com/rlsim/rlsim/report"
	"gonum.org/v1/plot/vg"
)

// DesignFigures draw, for every design parameter a report's variants sweep (two values or
// more), its outcomes against it: a panel per outcome, a line per algorithm and setting of
// the rest that was run at two values or more (the others stay in the table). A report
// that sweeps none has none.
func DesignFigures(r *report.Report) []*chart.Figure {
	var figs []*chart.Figure
	for _, p := range report.DesignParams {
		xs := map[float64]bool{}
		var lines []string
		byLine := map[string][]report.Result{}
		for _, x := range r.Results {
			if x.Distributed == nil {
				continue
			}
			v, ok := p.X(x.Distributed)
			if !ok {
				continue
			}
			xs[v] = true
			l := p.Line(x)
			if byLine[l] == nil {
				lines = append(lines, l)
			}
			byLine[l] = append(byLine[l], x)
		}
		lines = slices.DeleteFunc(lines, func(l string) bool {
			at := map[float64]bool{}
			for _, x := range byLine[l] {
				v, _ := p.X(x.Distributed)
				at[v] = true
			}
			return len(at) < 2
		})
		if len(xs) < 2 || len(lines) == 0 {
			continue
		}
		fig := &chart.Figure{Name: p.Name, Columns: len(p.Panels),
			Meta: chart.Meta{Title: r.Scenario + ": " + p.Title, Caption: report.Caption(r)}}
		fig.Width, fig.Height = 13*vg.Inch, 5*vg.Inch
		for _, dp := range p.Panels {
			panel := chart.LinePanel{Title: dp.Title, XLabel: p.XLabel, YLabel: dp.YLabel, LogX: p.LogX, LogY: dp.LogY, Markers: true}
			for _, l := range lines {
				s := chart.Series{Name: l}
				for _, x := range byLine[l] {
					v, _ := p.X(x.Distributed)
					s.Points = append(s.Points, chart.Point{X: v, Y: dp.Y(x)})
				}
				slices.SortStableFunc(s.Points, func(a, b chart.Point) int { return cmp.Compare(a.X, b.X) })
				panel.Series = append(panel.Series, s)
			}
			if dp.Limit {
				panel.Limits = []chart.HLine{{Name: fmt.Sprintf("advertised (%d)", r.Policy.Limit), Y: float64(r.Policy.Limit)}}
			}
			fig.Panels = append(fig.Panels, panel)
		}
		figs = append(figs, fig)
	}
	return figs
}
