package cmd

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/rlsim/rlsim/render/chart"
)

// backoffFigures are the charts of a backoff run: the experiment's two figures (calls and
// completion time against clients, per strategy) when more than one client count was run,
// the herd (retries reaching the server per bin over time, per strategy) and the load
// (every attempt and the retries among them, per strategy, against the overloaded
// backend's capacity) at the largest client count.
func backoffFigures(o *backoffOptions, rep backoffReport) []*chart.Figure {
	caption := fmt.Sprintf("model %s · %s · base %s, cap %s · seed %d\n%s",
		rep.Model, rep.Setup, time.Duration(rep.Base), time.Duration(rep.Cap), rep.Seed, backoffCommand(o, rep.Seed))
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
			Title:   fmt.Sprintf("backoff, model %s: total calls and time to finish against clients (mean of %d runs)", rep.Model, o.runs),
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
		capacity := 0.0
		if rep.Model == "overload" {
			capacity = o.rl.capacity * time.Duration(rep.Bin).Seconds()
		}
		figs = append(figs, chart.LoadFigure(chart.Meta{
			Title:   fmt.Sprintf("backoff, model %s: %d clients' attempts reaching the server per %s, per strategy", rep.Model, largest, time.Duration(rep.Bin)),
			Caption: caption + "\nfirst run of each strategy",
		}, load, time.Duration(rep.Bin), capacity))
	}
	return figs
}

// backoffCommand is the command line that reproduces a run, for chart captions: the
// model, client counts and runs, every other flag the user set that shapes the results,
// and the seed.
func backoffCommand(o *backoffOptions, seed uint64) string {
	parts := []string{"rlsim backoff", "--model " + o.model, "--clients " + o.clients, "--runs " + strconv.Itoa(o.runs)}
	parts = append(parts, o.reproduce...)
	parts = append(parts, "--seed "+strconv.FormatUint(seed, 10))
	return strings.Join(parts, " ")
}

// notReproducing are flags that change where and how results are written, not the
// results themselves (or that backoffCommand writes itself).
var notReproducing = []string{"model", "clients", "runs", "seed", "out", "charts", "format", "series", "workers", "decisions"}

// reproducingFlags lists the flags set on the command line that shape the results, as
// "--name value", in the flag set's (sorted) order.
func reproducingFlags(fs *pflag.FlagSet) []string {
	var out []string
	fs.Visit(func(f *pflag.Flag) {
		if slices.Contains(notReproducing, f.Name) {
			return
		}
		v := f.Value.String()
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			v = strings.Join(sv.GetSlice(), ",")
		}
		if f.Value.Type() == "bool" {
			out = append(out, "--"+f.Name+"="+v)
			return
		}
		out = append(out, "--"+f.Name+" "+v)
	})
	return out
}

// renderBackoffCharts renders the figures in every format, before anything is written,
// as files of the folder backoff-MODEL under the results folder.
func renderBackoffCharts(o *backoffOptions, rep backoffReport, formats []string) ([]outFile, error) {
	var files []outFile
	dir := "backoff-" + o.model
	for _, fig := range backoffFigures(o, rep) {
		for _, format := range formats {
			var b bytes.Buffer
			if err := fig.Render(&b, format); err != nil {
				return nil, fmt.Errorf("chart %s: %w", fig.Name, err)
			}
			files = append(files, outFile{path: filepath.Join(dir, fig.Name+"."+format), data: b.Bytes()})
		}
	}
	return files, nil
}
