package chart

import (
	"fmt"
	"math"
	"strings"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/recorder"
)

// The least room a panel of a figure may get, axes and title included: below it the tick
// labels of its two axes run into one another and its title into the panel above.
const (
	MinPanelHeight = 1.5 * vg.Inch
	MinPanelWidth  = 2.2 * vg.Inch
)

// tickFace is the size of the tick labels (styleFonts), which rows and bars must fit.
const tickFace = 10

// Problems lays the figure out at its size, as Render would, and says what a reader could
// not read in it: a panel smaller than MinPanelHeight × MinPanelWidth, a panel with no
// data or nothing but zeros, a title wider than the room it has (the figure's, given
// titleShare of the page; a panel's, its tile), bars narrower than their category's name
// and dot rows lower than their label. None is a figure a reader can use.
func (f *Figure) Problems() []string {
	width, height := f.size()
	laid, err := f.draw(drawCanvas(width, height))
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	add := func(format string, args ...any) {
		out = append(out, fmt.Sprintf("chart %s: ", f.Name)+fmt.Sprintf(format, args...))
	}
	if laid.titleWidth > laid.room {
		add("title %.0f pt wide in %.0f pt", laid.titleWidth, laid.room)
	}
	face := textStyle(sans, tickFace, nil)
	titleFace := textStyle(sansBold, 12, nil)
	for i, tile := range laid.tiles {
		size := tile.Size()
		if size.Y < MinPanelHeight || size.X < MinPanelWidth {
			add("panel %d is %.0f × %.0f pt, under the %.0f × %.0f minimum", i, size.X, size.Y, MinPanelWidth, MinPanelHeight)
		}
		pl := laid.plots[i]
		for _, line := range strings.Split(pl.Title.Text, "\n") {
			if w := titleFace.Rectangle(line).Size().X; w > size.X {
				add("panel %d's title %q is %.0f pt wide in %.0f pt", i, line, w, size.X)
			}
		}
		data := pl.DataCanvas(tile).Size()
		switch p := f.Panels[i].(type) {
		case LinePanel:
			if allZero(p.Series) {
				add("panel %d (%s) draws nothing but zeros", i, p.Title)
			}
		case BarPanel:
			if barsZero(p.Series) {
				add("panel %d (%s) draws nothing but zeros", i, p.Title)
			}
			slot := data.X / vg.Length(len(p.Categories))
			for _, c := range p.Categories {
				if w := face.Rectangle(c).Size().X; w > slot {
					add("panel %d: the name %q is %.0f pt wide under a bar of %.0f pt: the names overlap", i, c, w, slot)
					break
				}
			}
		case DotPanel:
			if barsZero(p.Series) {
				add("panel %d (%s) draws nothing but zeros", i, p.Title)
			}
			if row, need := data.Y/vg.Length(len(p.Categories)), face.Rectangle("Mg").Size().Y; row < need {
				add("panel %d: rows of %.1f pt under labels of %.1f pt: the names overlap", i, row, need)
			}
		}
	}
	return out
}

func allZero(series []Series) bool {
	for _, s := range series {
		for _, q := range s.Points {
			if q.Y != 0 && !math.IsNaN(q.Y) {
				return false
			}
		}
	}
	return true
}

func barsZero(series []BarSeries) bool {
	for _, s := range series {
		for _, v := range s.Values {
			if v != 0 && !math.IsNaN(v) {
				return false
			}
		}
	}
	return true
}

// drawCanvas is a canvas that records what is drawn on it and renders nothing: enough to
// lay a figure out.
func drawCanvas(width, height vg.Length) draw.Canvas {
	return draw.NewCanvas(&recorder.Canvas{}, width, height)
}

// drawOn is the canvas of a vg canvas that knows its size.
func drawOn(c vg.CanvasSizer) draw.Canvas { return draw.New(c) }
