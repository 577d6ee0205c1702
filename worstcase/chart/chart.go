// Package chart draws the worst-case curve: the most an algorithm admitted for one key in
// any window of length T, against T, with the advertised limit as a line. It is small and
// self-contained (gonum.org/v1/plot), writes PNG or SVG to an io.Writer, and opens no file.
package chart

import (
	"fmt"
	"io"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Point is one measurement: the most admitted (units) in one window of length T.
type Point struct {
	T        time.Duration
	Admitted float64
}

// Series is one algorithm's curve, in increasing T.
type Series struct {
	Name   string
	Points []Point
}

// Curves is the whole chart.
type Curves struct {
	Title string
	// Limit is the advertised limit L, drawn as a dashed horizontal line.
	Limit float64
	// Window is the advertised window W, marked on the x axis by a dotted vertical line.
	Window time.Duration
	Series []Series
}

// Size of the chart.
const (
	width  = 8 * vg.Inch
	height = 5 * vg.Inch
)

// Write renders c as format ("png" or "svg") to w.
func (c Curves) Write(w io.Writer, format string) error {
	if format != "png" && format != "svg" {
		return fmt.Errorf("chart format %q: want png or svg", format)
	}
	p, err := c.plot()
	if err != nil {
		return err
	}
	wt, err := p.WriterTo(width, height, format)
	if err != nil {
		return err
	}
	_, err = wt.WriteTo(w)
	return err
}

func (c Curves) plot() (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = c.Title
	p.X.Label.Text = "window length T (seconds)"
	p.Y.Label.Text = "most admitted in one window of length T (requests)"
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())

	maxT, maxY := c.Window.Seconds(), c.Limit
	for i, s := range c.Series {
		xys := make(plotter.XYs, len(s.Points))
		for j, pt := range s.Points {
			xys[j] = plotter.XY{X: pt.T.Seconds(), Y: pt.Admitted}
			maxT, maxY = max(maxT, pt.T.Seconds()), max(maxY, pt.Admitted)
		}
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, fmt.Errorf("series %s: %w", s.Name, err)
		}
		line.Color = plotutil.Color(i)
		line.Dashes = plotutil.Dashes(0)
		points.Color = plotutil.Color(i)
		points.Shape = plotutil.Shape(i)
		p.Add(line, points)
		p.Legend.Add(s.Name, line, points)
	}

	limit, err := plotter.NewLine(plotter.XYs{{X: 0, Y: c.Limit}, {X: maxT, Y: c.Limit}})
	if err != nil {
		return nil, err
	}
	limit.Width = vg.Points(1.5)
	limit.Dashes = []vg.Length{vg.Points(6), vg.Points(4)}
	p.Add(limit)
	p.Legend.Add(fmt.Sprintf("limit L = %s per %s", trim(c.Limit), c.Window), limit)

	if c.Window > 0 {
		mark, err := plotter.NewLine(plotter.XYs{{X: c.Window.Seconds(), Y: 0}, {X: c.Window.Seconds(), Y: maxY * 1.05}})
		if err != nil {
			return nil, err
		}
		mark.Dashes = []vg.Length{vg.Points(1), vg.Points(3)}
		mark.LineStyle.Width = vg.Points(1)
		p.Add(mark)
		p.Legend.Add(fmt.Sprintf("T = W = %s", c.Window), mark)
	}
	p.X.Min, p.Y.Min = 0, 0
	p.Y.Max = maxY * 1.08
	p.Y.Tick.Marker = wholeTicks{}
	p.Legend.ThumbnailWidth = vg.Points(24)
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	return p, nil
}

// wholeTicks are gonum's default ticks labelled without trailing zeros ("250", not
// "250.00"): the axis counts requests.
type wholeTicks struct{}

func (wholeTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = trim(ticks[i].Value)
		}
	}
	return ticks
}

func trim(v float64) string {
	return fmt.Sprintf("%g", v)
}
