package render

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rlsim/rlsim/render/chart"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/scenario"
	"github.com/rlsim/rlsim/sweep"
)

// sweepMaxPanels is the most panels a sweep chart splits into; a grid with more combinations
// of the other parameters draws them as lines of one panel instead.
const sweepMaxPanels = 9

// SweepFigure draws metric against the swept parameter param: one panel per combination of the
// other parameters' values, one line per algorithm, a marker at every grid point. Durations
// are plotted in seconds, rates in percent; a parameter whose values span two orders of
// magnitude or more gets a logarithmic axis. The figure is named after what it draws,
// sweep-SCENARIO-METRIC-vs-PARAM.
func SweepFigure(res *sweep.Results, metric, param string) (*chart.Figure, error) {
	at := slices.IndexFunc(res.Sweep.Params, func(p sweep.Param) bool { return p.Name == param })
	if at < 0 {
		return nil, fmt.Errorf("chart: %s is not a swept parameter", param)
	}
	if !slices.Contains(sweep.MetricNames(), metric) {
		return nil, fmt.Errorf("chart: unknown metric %q (want one of %s)", metric, strings.Join(sweep.MetricNames(), ", "))
	}
	yLabel, scale := sweepMetricAxis(metric)
	var panels []chart.Curves
	panelOf := map[string]int{}
	lo, hi := 0.0, 0.0
	for _, row := range res.Rows {
		x, err := sweepAxisValue(param, row.Values[at])
		if err != nil {
			return nil, err
		}
		if lo == 0 || x < lo {
			lo = x
		}
		hi = max(hi, x)
		var others []string
		for j, p := range res.Sweep.Params {
			if j != at {
				others = append(others, p.Name+"="+row.Values[j])
			}
		}
		title := strings.Join(others, " · ")
		i, ok := panelOf[title]
		if !ok {
			i = len(panels)
			panelOf[title] = i
			panels = append(panels, chart.Curves{Title: title})
		}
		for _, r := range row.Results {
			y, ok := sweep.Metrics(r)[metric]
			if !ok {
				continue
			}
			s := sweepSeries(&panels[i], report.ResultName(r))
			s.Points = append(s.Points, chart.Point{X: x, Y: y * scale})
		}
	}
	if len(panels) > sweepMaxPanels {
		// Too many small multiples to read: one panel, a line per algorithm and combination.
		one := chart.Curves{}
		for _, p := range panels {
			for _, s := range p.Series {
				s.Name += " · " + p.Title
				one.Series = append(one.Series, s)
			}
		}
		panels = []chart.Curves{one}
	}
	for _, p := range panels {
		for _, s := range p.Series {
			slices.SortStableFunc(s.Points, func(a, b chart.Point) int {
				switch {
				case a.X < b.X:
					return -1
				case a.X > b.X:
					return 1
				}
				return 0
			})
		}
	}
	name := fmt.Sprintf("sweep-%s-%s-vs-%s", res.Sweep.Scenario, metric, strings.ReplaceAll(param, ".", "-"))
	meta := chart.Meta{
		Title:   fmt.Sprintf("%s: %s against %s", res.Sweep.Scenario, metric, param),
		Caption: sweepCaption(res, metric, param),
	}
	return chart.SweepFigure(meta, name, sweepParamAxis(param), yLabel, panels, lo > 0 && hi/lo >= 100), nil
}

// sweepSeries is the series of c named name, added at the end if c has none yet.
func sweepSeries(c *chart.Curves, name string) *chart.Series {
	for i := range c.Series {
		if c.Series[i].Name == name {
			return &c.Series[i]
		}
	}
	c.Series = append(c.Series, chart.Series{Name: name})
	return &c.Series[len(c.Series)-1]
}

// sweepCaption states where the chart's data came from: the scenario and its file's hash, the
// seed, and the command that runs the sweep again.
func sweepCaption(res *sweep.Results, metric, param string) string {
	s := res.Sweep
	var seed string
	switch {
	case slices.ContainsFunc(s.Params, func(p sweep.Param) bool { return p.Name == "seed" }):
		seed = "seed swept"
	case s.Seed != nil:
		seed = "seed " + strconv.FormatUint(*s.Seed, 10)
	case len(res.Rows) > 0:
		seed = "seed " + strconv.FormatUint(res.Rows[0].Seed, 10) + " (the scenario's)"
	}
	cmd := []string{"rlsim sweep --scenario " + s.Scenario}
	for _, p := range s.Params {
		cmd = append(cmd, "--param "+p.Name+"="+strings.Join(p.Values, ","))
	}
	if len(s.Algorithms) > 0 {
		cmd = append(cmd, "--algorithms "+strings.Join(s.Algorithms, ","))
	}
	if s.Seed != nil {
		cmd = append(cmd, "--seed "+strconv.FormatUint(*s.Seed, 10))
	}
	cmd = append(cmd, "--chart-metric "+metric, "--chart-param "+param)
	return fmt.Sprintf("scenario %s (sha256 %.12s) · %s · %d grid points\n%s",
		s.Scenario, s.SHA256, seed, s.Points, strings.Join(cmd, " "))
}

// sweepParamAxis labels a parameter's axis with its unit.
func sweepParamAxis(param string) string {
	switch param {
	case "policy.window", "duration", "cluster.sync", "cluster.failover_lag":
		return param + " (s)"
	case "cluster.maxmemory":
		return param + " (bytes)"
	case "cluster.nodes":
		return param + " (nodes)"
	case "policy.limit":
		return param + " (units per window)"
	case "policy.burst":
		return param + " (units)"
	}
	return param
}

// sweepMetricAxis labels a metric's axis with its unit, and gives the factor its values are
// drawn at: rates, stored as fractions, are drawn in percent.
func sweepMetricAxis(metric string) (label string, scale float64) {
	switch {
	case strings.HasSuffix(metric, "_rate"):
		return metric + " (%)", 100
	case strings.HasSuffix(metric, "over_admission"):
		return metric + " (× the limit)", 1
	case strings.HasPrefix(metric, "delay_ms"):
		return metric + " (ms)", 1
	case metric == "state_bytes_per_key":
		return metric + " (bytes)", 1
	case metric == "peak_window_admitted", metric == "backend_peak":
		return metric + " (units)", 1
	case metric == "requests", metric == "admitted", metric == "rejected", metric == "false_allow", metric == "false_reject":
		return metric + " (requests)", 1
	}
	return metric, 1
}

// sweepAxisValue is a parameter value as a number: seconds for durations.
func sweepAxisValue(param, value string) (float64, error) {
	if strings.HasSuffix(param, "window") || param == "duration" || param == "cluster.sync" || param == "cluster.failover_lag" {
		d, err := time.ParseDuration(value)
		return d.Seconds(), err
	}
	if param == "cluster.maxmemory" {
		b, err := scenario.ParseBytes(value)
		return float64(b), err
	}
	return strconv.ParseFloat(value, 64)
}
