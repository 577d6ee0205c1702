package chart

import (
	"reflect"
	"testing"
	"time"
)

func TestBinPoints(t *testing.T) {
	got := BinPoints([]int64{3, 0, 5}, 10*time.Millisecond)
	want := []Point{{0, 3}, {0.01, 0}, {0.02, 5}, {0.03, 0}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if got := BinPoints(nil, time.Second); !reflect.DeepEqual(got, []Point{{0, 0}, {1, 0}}) {
		t.Fatalf("empty: %v", got)
	}
}

// TestHerdFigureSharesTheTimeSpan: one panel per strategy on shared axes; a strategy that
// drained early stops where it drained, and the caller's points are left alone.
func TestHerdFigureSharesTheTimeSpan(t *testing.T) {
	short := BinPoints([]int64{500, 0, 0, 480}, time.Second)
	long := BinPoints([]int64{20, 21, 19, 22, 18, 20, 21, 0, 3}, time.Second)
	before := len(short)
	f := HerdFigure(meta, []Series{{Name: "exponential", Points: short}, {Name: "full-jitter", Points: long}}, time.Second)
	if len(f.Panels) != 2 || !f.SharedX || !f.SharedY || len(short) != before {
		t.Fatalf("panels %d, shared %v/%v, caller's points %d", len(f.Panels), f.SharedX, f.SharedY, len(short))
	}
	for i, end := range []float64{4, 9} {
		pts := f.Panels[i].(LinePanel).Series[0].Points
		if last := pts[len(pts)-1]; last != (Point{X: end, Y: 0}) {
			t.Errorf("panel %d ends at %v, want (%g, 0)", i, last, end)
		}
	}
	if p := f.Panels[1].(LinePanel); p.XLabel == "" || f.Panels[0].(LinePanel).XLabel != "" {
		t.Error("only the bottom panel labels the time axis")
	}
	render(t, f, "svg")
}

// TestHerdFigureKeepsTheEndOfAWaveAfterDownsampling: a long series whose last bin is a
// wave must fall back to zero after it, not hold the wave to the end of the panel.
func TestHerdFigureKeepsTheEndOfAWaveAfterDownsampling(t *testing.T) {
	counts := make([]int64, 1001)
	counts[1000] = 60
	short := BinPoints(counts, 10*time.Millisecond)
	long := BinPoints(make([]int64, 15000), 10*time.Millisecond)
	f := HerdFigure(meta, []Series{{Name: "none", Points: short}, {Name: "exponential", Points: long}}, 10*time.Millisecond)
	pts := f.Panels[0].(LinePanel).Series[0].Points
	var peakAt float64 = -1
	for i, q := range pts {
		if q.Y == 60 {
			peakAt = q.X
			if next := pts[i+1]; next.Y != 0 || next.X > 10.02 {
				t.Fatalf("after the wave at %.2f s: %v, want 0 from 10.01 s", q.X, next)
			}
		}
	}
	if peakAt < 9.9 || pts[len(pts)-1] != (Point{X: 10.01, Y: 0}) {
		t.Fatalf("wave at %.2f s, last point %v", peakAt, pts[len(pts)-1])
	}
}
