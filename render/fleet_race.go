package render

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"

	"github.com/rlsim/rlsim/render/chart"
	"github.com/rlsim/rlsim/report"
	"gonum.org/v1/plot/vg"
)

// RaceFigures draw the read-decide-write race of a report with shared-racy variants: per
// algorithm a panel of the effective limit against the node count, one line per store
// round trip for the racy fleet and, beside it, the atomic script's variants of the same
// report (one line for every round trip when they all agree, as they should), against
// the advertised limit. A report without shared-racy results has none.
func RaceFigures(r *report.Report) []*chart.Figure {
	type line struct {
		name   string
		racy   bool
		rtt    float64
		points []chart.Point
	}
	var algorithms []string
	lines := map[string][]*line{} // per algorithm
	find := func(alg, name string, racy bool, rtt float64) *line {
		for _, l := range lines[alg] {
			if l.name == name {
				return l
			}
		}
		l := &line{name: name, racy: racy, rtt: rtt}
		lines[alg] = append(lines[alg], l)
		return l
	}
	racy := false
	for _, x := range r.Results {
		d := x.Distributed
		if d == nil || d.Placement != "shared-racy" && d.Placement != "shared" {
			continue
		}
		racy = racy || d.Placement == "shared-racy"
		if !slices.Contains(algorithms, x.Algorithm) {
			algorithms = append(algorithms, x.Algorithm)
		}
		what := "atomic script"
		if d.Placement == "shared-racy" {
			what = "read-decide-write"
		}
		name := fmt.Sprintf("%s, %s ms round trip", what, strconv.FormatFloat(d.StoreLatencyMS, 'g', -1, 64))
		if d.Balancer != "round-robin" {
			name += ", " + d.Balancer + " routing"
		}
		l := find(x.Algorithm, name, d.Placement == "shared-racy", d.StoreLatencyMS)
		l.points = append(l.points, chart.Point{X: float64(d.Nodes), Y: float64(d.EffectiveLimit)})
	}
	if !racy {
		return nil
	}
	meta := chart.Meta{
		Title:   r.Scenario + ": effective limit against nodes and store round trip — read, decide, write back vs the atomic script",
		Caption: report.Caption(r),
	}
	fig := &chart.Figure{Name: "race", Meta: meta, Columns: min(len(algorithms), 2),
		Height: vg.Length(1.4+3.4*float64((len(algorithms)+1)/2)) * vg.Inch}
	if fig.Columns == 2 {
		fig.Width = 13 * vg.Inch
	}
	for _, alg := range algorithms {
		ls := lines[alg]
		slices.SortStableFunc(ls, func(a, b *line) int { return cmp.Compare(a.rtt, b.rtt) })
		var series []chart.Series
		var atomic []*line
		for _, l := range ls {
			slices.SortStableFunc(l.points, func(a, b chart.Point) int { return cmp.Compare(a.X, b.X) })
			if l.racy {
				series = append(series, chart.Series{Name: l.name, Points: l.points})
			} else {
				atomic = append(atomic, l)
			}
		}
		same := len(atomic) > 1
		for _, l := range atomic[min(1, len(atomic)):] {
			same = same && slices.Equal(l.points, atomic[0].points)
		}
		if same {
			series = append(series, chart.Series{Name: "atomic script, every round trip", Points: atomic[0].points})
		} else {
			for _, l := range atomic {
				series = append(series, chart.Series{Name: l.name, Points: l.points})
			}
		}
		panel := chart.EffectiveLimitFigure(meta, "", series, float64(r.Policy.Limit)).Panels[0].(chart.LinePanel)
		panel.Title, panel.XLabel = alg, "nodes"
		fig.Panels = append(fig.Panels, panel)
	}
	return []*chart.Figure{fig}
}
