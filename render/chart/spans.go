package chart

import (
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Span marks a stretch of the X axis behind a line panel's data: an outage as a shaded
// band from From to To, or an instant (From == To, such as a scale-out) as a dotted
// vertical line. Spans of the same Name share one legend entry.
type Span struct {
	Name     string
	From, To float64
}

var spanShade = color.Gray{Y: 0xdd}

// addSpans draws the spans under whatever is added after them.
func addSpans(pl *plot.Plot, leg *legend, spans []Span) {
	for _, s := range spans {
		if !finite(s.From) || !finite(s.To) || s.To < s.From {
			continue
		}
		if _, isLog := pl.X.Scale.(plot.LogScale); isLog && s.From <= 0 {
			continue
		}
		sp := span{s}
		pl.Add(sp)
		leg.add(s.Name, sp)
	}
}

type span struct{ Span }

func (s span) instant() bool { return s.From == s.To }

func (s span) lineStyle() draw.LineStyle {
	return draw.LineStyle{Color: gray, Width: vg.Points(1.4), Dashes: []vg.Length{vg.Points(2), vg.Points(3)}}
}

func (s span) Plot(c draw.Canvas, p *plot.Plot) {
	x, _ := p.Transforms(&c)
	from, to := x(s.From), x(s.To)
	if s.instant() {
		c.StrokeLine2(s.lineStyle(), from, c.Min.Y, from, c.Max.Y)
		return
	}
	from, to = max(from, c.Min.X), min(to, c.Max.X)
	if to <= from {
		return
	}
	c.FillPolygon(spanShade, []vg.Point{{X: from, Y: c.Min.Y}, {X: to, Y: c.Min.Y}, {X: to, Y: c.Max.Y}, {X: from, Y: c.Max.Y}})
}

// DataRange keeps a span's X inside the axis; it claims no Y range.
func (s span) DataRange() (xmin, xmax, ymin, ymax float64) {
	return s.From, s.To, math.Inf(1), math.Inf(-1)
}

func (s span) Thumbnail(c *draw.Canvas) {
	if s.instant() {
		x := c.Center().X
		c.StrokeLine2(s.lineStyle(), x, c.Min.Y, x, c.Max.Y)
		return
	}
	c.FillPolygon(spanShade, []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Min.X, Y: c.Max.Y}})
}
