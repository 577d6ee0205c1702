package render

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rlsim/rlsim/render/chart"
	"github.com/rlsim/rlsim/report"
)

// HerdFigures are the charts of a report's retrying clients: per algorithm, the retries
// reaching the server per bin over time, one panel per strategy (the first run of each).
// Without jitter the herd shows as tall waves; with jitter as a low smear. Reports
// without retry results, or whose results kept no series, give none.
func HerdFigures(r *report.Report) []*chart.Figure {
	var algs []string
	byAlg := map[string][]chart.Series{}
	var bin time.Duration
	var clients int
	for _, x := range r.Retries {
		if x.Arrivals == nil {
			continue
		}
		if _, seen := byAlg[x.Algorithm]; !seen {
			algs = append(algs, x.Algorithm)
		}
		bin, clients = time.Duration(x.Bin), x.Clients
		byAlg[x.Algorithm] = append(byAlg[x.Algorithm], chart.Series{Name: x.Strategy, Points: chart.BinPoints(x.Arrivals, bin)})
	}
	var figs []*chart.Figure
	for _, alg := range algs {
		target := "a " + alg + " API"
		if c := report.BackendCapacity(r); c > 0 {
			target = fmt.Sprintf("a backend of %g requests/s", c)
		}
		caption := report.Caption(r) + "\nfirst run of each strategy; first tries not counted (they all leave together)"
		// A strategy that never retried would be a panel of zeros: the caption says so.
		var drawn []chart.Series
		var none []string
		for _, s := range byAlg[alg] {
			if slices.ContainsFunc(s.Points, func(p chart.Point) bool { return p.Y != 0 }) {
				drawn = append(drawn, s)
			} else {
				none = append(none, s.Name)
			}
		}
		if len(drawn) == 0 {
			continue
		}
		if len(none) > 0 {
			caption += "; no retries at all: " + strings.Join(none, ", ")
		}
		f := chart.HerdFigure(chart.Meta{
			Title:   fmt.Sprintf("%s: %d clients' retries reaching %s per %s, per strategy", r.Scenario, clients, target, bin),
			Caption: caption,
		}, drawn, bin)
		if len(algs) > 1 {
			f.Name = "herd-" + alg
		}
		figs = append(figs, f)
	}
	return figs
}

// LoadFigures are the load charts of a report's retrying clients: per algorithm (or the
// overloaded backend), every attempt and the retries among them per bin over time, one
// panel per strategy, with the backend's capacity per bin when it has one.
func LoadFigures(r *report.Report) []*chart.Figure {
	var algs []string
	byAlg := map[string][]chart.LoadPanel{}
	capacity := map[string]float64{}
	var bin time.Duration
	var clients int
	for _, x := range r.Retries {
		if x.Attempts == nil {
			continue
		}
		if _, seen := byAlg[x.Algorithm]; !seen {
			algs = append(algs, x.Algorithm)
		}
		bin, clients = time.Duration(x.Bin), x.Clients
		capacity[x.Algorithm] = x.Capacity * bin.Seconds()
		byAlg[x.Algorithm] = append(byAlg[x.Algorithm], chart.LoadPanel{Name: x.Strategy,
			Attempts: chart.BinPoints(x.Attempts, bin), Retries: chart.BinPoints(x.Arrivals, bin)})
	}
	var figs []*chart.Figure
	for _, alg := range algs {
		target := "a " + alg + " API"
		if capacity[alg] > 0 {
			target = fmt.Sprintf("a backend of %g requests/s", capacity[alg]/bin.Seconds())
		}
		f := chart.LoadFigure(chart.Meta{
			Title:   fmt.Sprintf("%s: %d clients' attempts reaching %s per %s, per strategy", r.Scenario, clients, target, bin),
			Caption: report.Caption(r) + "\nfirst run of each strategy",
		}, byAlg[alg], bin, capacity[alg])
		if len(algs) > 1 {
			f.Name = "load-" + alg
		}
		figs = append(figs, f)
	}
	return figs
}

// RetryFigures are HerdFigures followed by LoadFigures.
func RetryFigures(r *report.Report) []*chart.Figure { return append(HerdFigures(r), LoadFigures(r)...) }
