package render

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/render/chart"
	"github.com/rlsim/rlsim/report"
	"gonum.org/v1/plot/vg"
)

// FleetFigures are the charts of a fleet run: the effective limit over time, one panel
// per variant — for the busiest key, what the whole fleet admitted in the trailing
// window, one line per algorithm, against the advertised limit, with the store's outages
// shaded and node-count changes marked. A report without fleet results has none.
func FleetFigures(r *report.Report) []*chart.Figure {
	type variant struct {
		d      *report.Distributed
		series []chart.Series
		peak   int64
	}
	var variants []*variant
	byName := map[string]*variant{}
	for _, x := range r.Results {
		d := x.Distributed
		if d == nil || x.Timeline == nil {
			continue
		}
		v := byName[d.Variant]
		if v == nil {
			v = &variant{d: d}
			byName[d.Variant] = v
			variants = append(variants, v)
		}
		v.series = append(v.series, chart.Series{Name: x.Algorithm, Points: windowPoints(x.Timeline)})
		v.peak = max(v.peak, d.EffectiveLimit)
	}
	if len(variants) == 0 {
		return nil
	}
	limit := float64(r.Policy.Limit)
	meta := chart.Meta{
		Title:   r.Scenario + ": effective limit — the whole fleet's trailing-window count, busiest key",
		Caption: report.Caption(r),
	}
	rows := (len(variants) + 1) / 2
	fig := &chart.Figure{Name: "effective-limit", Meta: meta, Columns: min(len(variants), 2),
		Height: vg.Length(1.4+2.6*float64(rows)) * vg.Inch}
	if fig.Columns == 2 {
		fig.Width = 13 * vg.Inch // room for each panel's title: variant, nodes, peak
	}
	var identical []string
	for i, v := range variants {
		series := make([]chart.Series, len(v.series))
		for j, s := range v.series {
			series[j] = chart.Series{Name: s.Name, Points: chart.Downsample(s.Points, chart.MaxPoints, chart.Max)}
		}
		if note := identicalNote(series); note != "" {
			identical = append(identical, v.d.Variant+": "+strings.TrimPrefix(note, "identical here: "))
		}
		panel := chart.EffectiveLimitFigure(meta, "", series, limit).Panels[0].(chart.LinePanel)
		nodes := fmt.Sprintf("%d nodes", v.d.Nodes)
		if v.d.NodesMax != v.d.Nodes {
			nodes = fmt.Sprintf("%d→%d nodes", v.d.Nodes, v.d.NodesMax)
		}
		if v.d.Balancer != "round-robin" {
			nodes += ", " + v.d.Balancer
		}
		panel.Title = fmt.Sprintf("%s · %s · effective %d = %.2f×", v.d.Variant, nodes, v.peak, float64(v.peak)/limit)
		panel.YLabel = fmt.Sprintf("admitted in trailing %s", time.Duration(r.Policy.Window))
		if i >= len(variants)-fig.Columns {
			panel.XLabel = "time since start (s)"
		}
		panel.Steps = true
		for _, e := range v.d.Events {
			if e.Label != "" {
				panel.Spans = append(panel.Spans, chart.Span{Name: e.Label, From: e.At.Seconds(), To: (e.At + e.For).Seconds()})
				continue
			}
			if e.For > 0 {
				panel.Spans = append(panel.Spans, chart.Span{Name: "store down", From: e.At.Seconds(), To: (e.At + e.For).Seconds()})
			} else {
				panel.Spans = append(panel.Spans, chart.Span{Name: fmt.Sprintf("scaled to %d nodes", e.Nodes), From: e.At.Seconds(), To: e.At.Seconds()})
			}
		}
		fig.Panels = append(fig.Panels, panel)
	}
	if n := len(identical); n > 0 {
		if n > maxIdenticalNoted {
			identical = append(identical[:maxIdenticalNoted], fmt.Sprintf("and in %d more variants", n-maxIdenticalNoted))
		}
		fig.Meta.Caption = report.WithNote(fig.Meta.Caption, "identical here (drawn one on another) — "+strings.Join(identical, "; "))
	}
	figs := []*chart.Figure{fig}
	if skew := skewFigure(r); skew != nil {
		figs = append(figs, skew)
	}
	return figs
}

// skewFigure draws, when a report's variants sweep node clock skew, each shared
// algorithm's effective limit against the skew: a panel per algorithm, a line per clock
// the store decided by, against the advertised limit; the bucket-type algorithms (token
// bucket, GCRA, the lease) also draw their node-clock bound b + L·(W + 2·skew)/W. A
// report whose variants share one skew has none.
func skewFigure(r *report.Report) *chart.Figure {
	type line struct {
		algorithm, clock string
		points           []chart.Point
	}
	var lines []*line
	skews := map[report.Duration]bool{}
	for _, x := range r.Results {
		d := x.Distributed
		if d == nil || d.Clock == "" {
			continue
		}
		skews[d.Skew] = true
		i := slices.IndexFunc(lines, func(l *line) bool { return l.algorithm == x.Algorithm && l.clock == d.Clock })
		if i < 0 {
			lines = append(lines, &line{algorithm: x.Algorithm, clock: d.Clock})
			i = len(lines) - 1
		}
		lines[i].points = append(lines[i].points, chart.Point{X: time.Duration(d.Skew).Seconds(), Y: float64(d.EffectiveLimit)})
	}
	if len(skews) < 2 {
		return nil
	}
	var algs []string
	for _, l := range lines {
		if !slices.Contains(algs, l.algorithm) {
			algs = append(algs, l.algorithm)
		}
		slices.SortStableFunc(l.points, func(a, b chart.Point) int { return cmp.Compare(a.X, b.X) })
	}
	limit := float64(r.Policy.Limit)
	fig := &chart.Figure{Name: "effective-limit-skew", Columns: min(len(algs), 3), SharedY: true,
		Meta: chart.Meta{
			Title:   r.Scenario + ": effective limit against node clock skew, by the nodes' clocks and by the store's",
			Caption: report.Caption(r),
		}}
	rows := (len(algs) + fig.Columns - 1) / fig.Columns
	fig.Width, fig.Height = 13*vg.Inch, vg.Length(1.4+3*float64(rows))*vg.Inch
	for i, alg := range algs {
		panel := chart.LinePanel{
			Title:  alg,
			YLabel: fmt.Sprintf("effective limit (per %s)", time.Duration(r.Policy.Window)),
			Limits: []chart.HLine{{Name: fmt.Sprintf("advertised (%g)", limit), Y: limit}},
		}
		if i >= len(algs)-fig.Columns {
			panel.XLabel = "node clock skew ± (s)"
		}
		var xs []float64
		for _, l := range lines {
			if l.algorithm == alg {
				panel.Series = append(panel.Series, chart.Series{Name: l.clock + " clock", Points: l.points})
				for _, q := range l.points {
					xs = append(xs, q.X)
				}
			}
		}
		// The bucket kinds (and the leased placement's bucket) have a bound of their own.
		if algorithms.IsBucket(alg) || alg == "lease" {
			slices.Sort(xs)
			bound := chart.Series{Name: "bound b + L·(W + 2·skew)/W"}
			w := time.Duration(r.Policy.Window).Seconds()
			for _, x := range slices.Compact(xs) {
				bound.Points = append(bound.Points, chart.Point{X: x, Y: float64(r.Policy.Burst) + limit*(w+2*x)/w})
			}
			panel.Series = append(panel.Series, bound)
		}
		fig.Panels = append(fig.Panels, panel)
	}
	return fig
}

// windowPoints are a timeline's busiest-key window counts per bin, X in seconds, closed
// by a point at the end of the last bin so steps draw that bin's width too.
func windowPoints(tl *report.Timeline) []chart.Point {
	pts := make([]chart.Point, 0, len(tl.WindowAdmitted)+1)
	for i, v := range tl.WindowAdmitted {
		pts = append(pts, chart.Point{X: (time.Duration(i) * tl.Bin).Seconds(), Y: float64(v)})
	}
	if n := len(pts); n > 0 {
		pts = append(pts, chart.Point{X: (time.Duration(n) * tl.Bin).Seconds(), Y: pts[n-1].Y})
	}
	return pts
}

// maxIdenticalNoted is how many variants a fleet chart's caption names series that
// coincide in, before it counts the rest.
const maxIdenticalNoted = 2
