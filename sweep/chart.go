package sweep

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// WriteChart draws metric against the swept parameter param, one line per algorithm and
// combination of the other parameters' values, and writes it to w as format ("png" or
// "svg"). Durations are plotted in seconds; a parameter whose values span two orders of
// magnitude or more gets a logarithmic axis.
func WriteChart(w io.Writer, format string, res *Results, metric, param string) error {
	at := slices.IndexFunc(res.Sweep.Params, func(p Param) bool { return p.Name == param })
	if at < 0 {
		return fmt.Errorf("chart: %s is not a swept parameter", param)
	}
	if !slices.Contains(MetricNames(), metric) {
		return fmt.Errorf("chart: unknown metric %q (want one of %s)", metric, strings.Join(MetricNames(), ", "))
	}
	type series struct {
		label string
		xys   plotter.XYs
	}
	var all []*series
	find := func(label string) *series {
		for _, s := range all {
			if s.label == label {
				return s
			}
		}
		s := &series{label: label}
		all = append(all, s)
		return s
	}
	lo, hi := 0.0, 0.0
	for _, row := range res.Rows {
		x, err := axisValue(param, row.Values[at])
		if err != nil {
			return err
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
		for _, r := range row.Results {
			y, ok := Metrics(r)[metric]
			if !ok {
				continue
			}
			s := find(strings.Join(append([]string{r.Algorithm}, others...), " "))
			s.xys = append(s.xys, plotter.XY{X: x, Y: y})
		}
	}

	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s: %s against %s", res.Sweep.Scenario, metric, param)
	p.X.Label.Text = param
	if strings.HasSuffix(param, "window") || param == "duration" {
		p.X.Label.Text += " (s)"
	}
	p.Y.Label.Text = metric
	if lo > 0 && hi/lo >= 100 {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	p.Legend.Top = true
	for i, s := range all {
		slices.SortStableFunc(s.xys, func(a, b plotter.XY) int {
			switch {
			case a.X < b.X:
				return -1
			case a.X > b.X:
				return 1
			}
			return 0
		})
		line, points, err := plotter.NewLinePoints(s.xys)
		if err != nil {
			return fmt.Errorf("chart: %w", err)
		}
		line.Color = plotutil.Color(i)
		line.Dashes = plotutil.Dashes(i / len(plotutil.DefaultColors))
		points.Color = plotutil.Color(i)
		points.Shape = plotutil.Shape(i)
		p.Add(line, points)
		p.Legend.Add(s.label, line, points)
	}
	// Room above the highest point for the legend, which sits at the top.
	if span := p.Y.Max - p.Y.Min; span > 0 {
		p.Y.Max += span * min(0.07*float64(len(all)), 1.5)
	} else {
		p.Y.Max += 1
	}
	wt, err := p.WriterTo(8*vg.Inch, 5*vg.Inch, format)
	if err != nil {
		return fmt.Errorf("chart: %w", err)
	}
	_, err = wt.WriteTo(w)
	return err
}

// axisValue is a parameter value as a number: seconds for durations.
func axisValue(param, value string) (float64, error) {
	if strings.HasSuffix(param, "window") || param == "duration" {
		d, err := time.ParseDuration(value)
		return d.Seconds(), err
	}
	return strconv.ParseFloat(value, 64)
}
