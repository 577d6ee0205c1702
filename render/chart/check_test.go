package chart

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot/vg"
)

// runs are n timelines of a fleet's runs, named as fleets name them.
func manyRuns(n int) []Run {
	runs := make([]Run, n)
	for i := range runs {
		runs[i].Name = fmt.Sprintf("sliding-window@atomic-%dn-%dms", i%10+1, 10*(i/10+1))
		for s := range 60 {
			runs[i].Admitted = append(runs[i].Admitted, Point{X: float64(s), Y: float64(s % 7)})
			runs[i].Refused = append(runs[i].Refused, Point{X: float64(s), Y: float64(s % 3)})
		}
	}
	return runs
}

func problemsWith(t *testing.T, f *Figure, want string) {
	t.Helper()
	ps := f.Problems()
	if !slices.ContainsFunc(ps, func(p string) bool { return strings.Contains(p, want) }) {
		t.Errorf("%s: problems %q, want one with %q", f.Name, ps, want)
	}
}

// The check finds what made the fixed-size figures unreadable, and the figures built
// for many runs pass it.
func TestProblemsFindsUnreadableFigures(t *testing.T) {
	meta := Meta{Title: "t", Caption: "c"}
	for _, n := range []int{2, 7, 13, 72} {
		if ps := TimelineFigure(meta, manyRuns(n), time.Second).Problems(); len(ps) > 0 {
			t.Errorf("%d runs: %q", n, ps)
		}
	}
	// The old figure: 72 panels in 6.4 inches.
	old := TimelineFigure(meta, manyRuns(72), time.Second)
	old.Columns, old.Width, old.Height = 3, 0, 6.4*vg.Inch
	problemsWith(t, old, "under the")

	names := make([]string, 72)
	over := make([]float64, 72)
	for i := range names {
		names[i] = manyRuns(72)[i].Name
		over[i] = 1 + float64(i%5)/10
	}
	acc := AccuracyFigure(meta, names, over, over, make([]float64, 72))
	if _, dots := acc.Panels[0].(DotPanel); !dots {
		t.Errorf("72 runs drawn as %T, want a dot plot", acc.Panels[0])
	}
	if ps := acc.Problems(); len(ps) > 0 {
		t.Errorf("accuracy of 72 runs: %q", ps)
	}
	if small := AccuracyFigure(meta, names[:3], over[:3], over[:3], over[:3]); len(small.Problems()) > 0 {
		t.Errorf("accuracy of 3 runs: %q", small.Problems())
	} else if _, bars := small.Panels[0].(BarPanel); !bars {
		t.Errorf("3 runs drawn as %T, want bars", small.Panels[0])
	}
	crammed := &Figure{Name: "crammed", Meta: meta, Height: 6 * vg.Inch, Panels: []Panel{BarPanel{Categories: names, Series: []BarSeries{{Name: "x", Values: over}}}}}
	problemsWith(t, crammed, "the names overlap")
	squeezed := &Figure{Name: "squeezed", Meta: meta, Height: 6 * vg.Inch, Panels: []Panel{DotPanel{Categories: append(names, names...), Series: []BarSeries{{Name: "x", Values: append(over, over...)}}}}}
	problemsWith(t, squeezed, "rows of")

	zeros := &Figure{Name: "zeros", Meta: meta, Panels: []Panel{LinePanel{Title: "flat", Series: []Series{{Name: "a", Points: []Point{{0, 0}, {1, 0}}}}}}}
	problemsWith(t, zeros, "nothing but zeros")
	if ps := (&Figure{Name: "one", Meta: meta, Panels: []Panel{LinePanel{Series: []Series{{Name: "a", Points: []Point{{0, 0}, {1, 1}}}}}}}).Problems(); len(ps) > 0 {
		t.Errorf("one line: %q", ps)
	}
}

// A title longer than the page is broken into lines within titleShare of the width, so
// a viewer's wider fallback face keeps it inside the frame; a panel's title is broken at
// its tile.
func TestLongTitlesAreBrokenIntoLines(t *testing.T) {
	title := "cluster-skew: effective limit against node clock skew, by the nodes' clocks and by the store's, per algorithm and variant"
	f := TimelineFigure(Meta{Title: title, Caption: "c"}, manyRuns(13), time.Second)
	width, height := f.size()
	laid, err := f.draw(drawCanvas(width, height))
	if err != nil {
		t.Fatal(err)
	}
	if len(laid.titleLines) < 2 || laid.titleWidth > laid.room || strings.Join(laid.titleLines, " ") != title {
		t.Errorf("title laid out as %q (%.0f pt in %.0f)", laid.titleLines, laid.titleWidth, laid.room)
	}
	if ps := f.Problems(); len(ps) > 0 {
		t.Errorf("%q", ps)
	}
	if got := laid.plots[12].Title.Text; !strings.Contains(got, "@\n") && got != manyRuns(13)[12].Name {
		t.Errorf("panel title %q", got)
	}
}
