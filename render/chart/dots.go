package chart

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// VLine is a vertical reference line drawn dashed down a dot panel, such as the promise.
type VLine struct {
	Name string
	X    float64
}

// DotPanel is a dot plot: one row per category, top to bottom, and on it one dot per
// series at its value along X. It takes the place of bars when there are too many to
// stand side by side with their names legible (a fleet of 72 runs): the names read
// horizontally down the left, however many there are, and the panel grows a row each.
type DotPanel struct {
	Title, XLabel string
	Categories    []string
	Series        []BarSeries
	Limits        []VLine
	// HideCategories leaves the rows' names off, for the panels right of the first in a
	// figure whose panels share the rows.
	HideCategories bool
	// LogX puts X on a log scale; values ≤ 0 are not drawn.
	LogX bool
}

// dotRow is the height a dot panel gives each category: the tick label's face (10 pt)
// and a little air.
const dotRow = 13 * vg.Length(1)

// DotPanelHeight is the height a figure needs for a dot panel of n rows: the rows, the
// panel's title and its X axis.
func DotPanelHeight(n int) vg.Length { return vg.Length(n)*dotRow + 1.1*vg.Inch }

func (p DotPanel) build(leg *legend) (*plot.Plot, error) {
	if len(p.Categories) == 0 || len(p.Series) == 0 {
		return nil, fmt.Errorf("no dots to draw")
	}
	n := len(p.Categories)
	pl := plot.New()
	pl.Title.Text = p.Title
	pl.X.Label.Text = p.XLabel
	grid := plotter.NewGrid()
	grid.Horizontal.Color = color.Gray{Y: 0xe4}
	pl.Add(grid)
	pl.Y.Tick.Marker = rowTicks{names: p.Categories, hide: p.HideCategories}
	pl.X.Tick.Marker = plainTicks{}
	if p.LogX {
		pl.X.Scale = plot.LogScale{}
		pl.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	for _, v := range p.Limits {
		if !finite(v.X) || p.LogX && v.X <= 0 {
			continue
		}
		vl := vline{v}
		pl.Add(vl)
		leg.add(v.Name, vl)
	}
	drawn := 0
	for _, s := range p.Series {
		if len(s.Values) != n {
			return nil, fmt.Errorf("series %q has %d values for %d categories", s.Name, len(s.Values), n)
		}
		var pts plotter.XYs
		for i, v := range s.Values {
			if !finite(v) || p.LogX && v <= 0 {
				continue
			}
			pts = append(pts, plotter.XY{X: v, Y: float64(n - 1 - i)})
		}
		if len(pts) == 0 {
			continue
		}
		dots, err := plotter.NewScatter(pts)
		if err != nil {
			return nil, fmt.Errorf("series %q: %w", s.Name, err)
		}
		c, _ := leg.color(s.Name)
		dots.GlyphStyle = draw.GlyphStyle{Color: c, Radius: vg.Points(3.5), Shape: leg.marker(s.Name)}
		pl.Add(dots)
		leg.add(s.Name, dots)
		drawn++
	}
	if drawn == 0 {
		return nil, fmt.Errorf("no value to draw")
	}
	pl.Y.Min, pl.Y.Max = -0.6, float64(n)-0.4
	if p.LogX {
		if !(pl.X.Min > 0) {
			return nil, fmt.Errorf("no positive value to draw on a log scale")
		}
		logDecades(&pl.X)
	} else {
		pl.X.Min = math.Min(pl.X.Min, 0)
		for _, v := range p.Limits {
			pl.X.Max = math.Max(pl.X.Max, v.X)
		}
		if pl.X.Max <= pl.X.Min {
			pl.X.Max = pl.X.Min + 1
		}
		pl.X.Max += 0.05 * (pl.X.Max - pl.X.Min)
	}
	return pl, nil
}

// rowTicks label a dot panel's rows with their categories, the first at the top.
type rowTicks struct {
	names []string
	hide  bool
}

func (t rowTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := make([]plot.Tick, len(t.names))
	for i, name := range t.names {
		ticks[i] = plot.Tick{Value: float64(len(t.names) - 1 - i), Label: name}
		if t.hide {
			ticks[i].Label = " " // a major tick with an empty label would be a minor one
		}
	}
	return ticks
}

// vline draws a dashed reference line down the data area.
type vline struct{ VLine }

func (v vline) Plot(c draw.Canvas, p *plot.Plot) {
	x, _ := p.Transforms(&c)
	xx := x(v.X)
	c.StrokeLine2(hline{}.style(), xx, c.Min.Y, xx, c.Max.Y)
}

func (v vline) DataRange() (xmin, xmax, ymin, ymax float64) {
	return v.X, v.X, math.Inf(1), math.Inf(-1)
}

func (v vline) Thumbnail(c *draw.Canvas) {
	y := c.Center().Y
	c.StrokeLine2(hline{}.style(), c.Min.X, y, c.Max.X, y)
}
