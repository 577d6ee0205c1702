package render

import (
	"fmt"
	"slices"
	"time"

	"github.com/rlsim/rlsim/backoff"
	"github.com/rlsim/rlsim/render/chart"
)

// BackoffFigures are the charts of `rlsim backoff`: the experiment's two figures (calls and
// completion time against clients, per strategy) when more than one client count was run,
// the herd (retries reaching the server per bin over time, per strategy) and the load
// (every attempt and the retries among them, per strategy, against the overloaded
// backend's capacity) at the largest client count.
//
// runs is the runs per client count, capacity the overloaded backend's in requests per
// second (0 for the other models), and command the command line that draws them again.
func BackoffFigures(rep backoff.Report, runs int, capacity float64, command string) []*chart.Figure {
	caption := fmt.Sprintf("model %s · %s · base %s, cap %s · seed %d\n%s",
		rep.Model, rep.Setup, time.Duration(rep.Base), time.Duration(rep.Cap), rep.Seed, command)
	var strategies []string
	var counts []int
	for _, r := range rep.Results {
		if !slices.Contains(strategies, r.Strategy) {
			strategies = append(strategies, r.Strategy)
		}
		if !slices.Contains(counts, r.Clients) {
			counts = append(counts, r.Clients)
		}
	}
	slices.Sort(counts)
	var figs []*chart.Figure
	if len(counts) > 1 {
		calls := make([]chart.Series, len(strategies))
		completion := make([]chart.Series, len(strategies))
		for i, s := range strategies {
			calls[i].Name, completion[i].Name = s, s
			for _, c := range counts {
				for _, r := range rep.Results {
					if r.Strategy == s && r.Clients == c {
						calls[i].Points = append(calls[i].Points, chart.Point{X: float64(c), Y: r.CallsMean})
						completion[i].Points = append(completion[i].Points, chart.Point{X: float64(c), Y: r.CompletionMSMean / 1000})
					}
				}
			}
		}
		figs = append(figs, chart.BackoffFigure(chart.Meta{
			Title:   fmt.Sprintf("backoff, model %s: total calls and time to finish against clients (mean of %d runs)", rep.Model, runs),
			Caption: caption,
		}, calls, completion))
	}
	largest := counts[len(counts)-1]
	var herd []chart.Series
	for _, r := range rep.Results {
		if r.Clients == largest && r.Arrivals != nil {
			herd = append(herd, chart.Series{Name: r.Strategy, Points: chart.BinPoints(r.Arrivals, time.Duration(rep.Bin))})
		}
	}
	if len(herd) > 0 {
		figs = append(figs, chart.HerdFigure(chart.Meta{
			Title:   fmt.Sprintf("backoff, model %s: %d clients' retries reaching the server per %s, per strategy", rep.Model, largest, time.Duration(rep.Bin)),
			Caption: caption + "\nfirst run of each strategy; first tries not counted (they all leave together)",
		}, herd, time.Duration(rep.Bin)))
	}
	var load []chart.LoadPanel
	for _, r := range rep.Results {
		if r.Clients == largest && r.Attempts != nil {
			load = append(load, chart.LoadPanel{Name: r.Strategy,
				Attempts: chart.BinPoints(r.Attempts, time.Duration(rep.Bin)), Retries: chart.BinPoints(r.Arrivals, time.Duration(rep.Bin))})
		}
	}
	if len(load) > 0 {
		figs = append(figs, chart.LoadFigure(chart.Meta{
			Title:   fmt.Sprintf("backoff, model %s: %d clients' attempts reaching the server per %s, per strategy", rep.Model, largest, time.Duration(rep.Bin)),
			Caption: caption + "\nfirst run of each strategy",
		}, load, time.Duration(rep.Bin), capacity*time.Duration(rep.Bin).Seconds()))
	}
	return figs
}
