package chart

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot/vg"
)

// MaxPoints is how many points a line keeps after Downsample: about one per pixel column
// of a panel.
const MaxPoints = 400

// Reduce is how Downsample merges consecutive points.
type Reduce int

const (
	// Mean averages the merged points: right for rates, whose area must stay the same.
	Mean Reduce = iota
	// Max keeps the largest: right for peaks, which must not be smoothed away.
	Max
)

// Downsample merges runs of consecutive points so that at most limit remain. Each merged
// point takes the X of the first point of its run (the start of the merged bin) and the
// mean or max of the Ys. Series of at most limit points are returned unchanged.
func Downsample(pts []Point, limit int, how Reduce) []Point {
	if limit <= 0 || len(pts) <= limit {
		return pts
	}
	k := (len(pts) + limit - 1) / limit
	out := make([]Point, 0, (len(pts)+k-1)/k)
	for i := 0; i < len(pts); i += k {
		run := pts[i:min(i+k, len(pts))]
		y := run[0].Y
		for _, q := range run[1:] {
			switch how {
			case Max:
				y = math.Max(y, q.Y)
			default:
				y += q.Y
			}
		}
		if how == Mean {
			y /= float64(len(run))
		}
		out = append(out, Point{X: run[0].X, Y: y})
	}
	return out
}

// Run is one algorithm's (or strategy's) timeline: rates per bin, X in seconds.
type Run struct {
	Name string
	// Admitted and Refused are requests per second in each bin, X at the bin's start.
	Admitted, Refused []Point
}

// TimelineFigure draws admitted requests per second up and refused ones down over time,
// one panel per run, all on the same Y scale; bin is the width of the runs' bins. The
// panels are small multiples, three or (past a dozen runs) four to a row, and the figure
// grows a row's height for every row, so each panel keeps its room however many runs a
// fleet has.
func TimelineFigure(meta Meta, runs []Run, bin time.Duration) *Figure {
	f := &Figure{Name: "admitted-timeline", Meta: meta, Columns: 3, SharedY: true, Height: 6.4 * vg.Inch}
	if len(runs) > 12 {
		f.Columns, f.Width = 4, 13*vg.Inch
	}
	f.Columns = min(f.Columns, len(runs))
	rows := (len(runs) + f.Columns - 1) / f.Columns
	if rows > 2 {
		f.Height = vg.Length(1.4+2.2*float64(rows)) * vg.Inch
		f.SharedX = true
	}
	for i, r := range runs {
		admitted := Downsample(r.Admitted, MaxPoints, Mean)
		refused := Downsample(r.Refused, MaxPoints, Mean)
		shown := bin
		if len(admitted) > 0 && len(r.Admitted) > len(admitted) {
			shown = bin * time.Duration((len(r.Admitted)+MaxPoints-1)/MaxPoints)
		}
		down := make([]Point, len(refused))
		for i, q := range refused {
			down[i] = Point{X: q.X, Y: -q.Y}
		}
		panel := LinePanel{
			Title:    r.Name,
			YLabel:   fmt.Sprintf("requests/s, %s bins", shown),
			Steps:    true,
			AbsTicks: true,
			Series: []Series{
				{Name: "admitted (up)", Points: admitted},
				{Name: "refused (down)", Points: down},
			},
		}
		// Shared X: only the bottom row says what it is.
		if !f.SharedX || i >= len(runs)-f.Columns {
			panel.XLabel = "time since start (s)"
		}
		f.Panels = append(f.Panels, panel)
	}
	return f
}

// barsFit reports whether categories stand side by side as bars in a figure of width,
// each name under its bar (the data area is the width less the legend's column and the
// Y axis, about 3.2 inches).
func barsFit(categories []string, width vg.Length) bool {
	slot := (width - 3.2*vg.Inch) / vg.Length(max(len(categories), 1))
	face := textStyle(sans, tickFace, nil)
	for _, c := range categories {
		if face.Rectangle(c).Size().X+vg.Points(4) > slot {
			return false
		}
	}
	return true
}

// WindowFigure draws each algorithm's busiest-key count in the trailing window over time
// against the limit line, one panel per algorithm on shared axes (small multiples: lines
// that coincide, as the buckets' often do, cannot hide one another), titled with the
// algorithm and its peak. A line above the limit is the promise broken (a fixed window on
// the boundary case reaches twice the limit).
func WindowFigure(meta Meta, series []Series, limit float64, window time.Duration) *Figure {
	f := &Figure{Name: "window-timeline", Meta: meta, SharedX: true, SharedY: true}
	f.Columns = min(len(series), 3)
	if rows := (len(series) + 2) / 3; rows > 1 {
		f.Height = vg.Length(1.4+2.6*float64(rows)) * vg.Inch
	}
	for i, s := range series {
		pts := Downsample(s.Points, MaxPoints, Max)
		peak := 0.0
		for _, q := range s.Points {
			peak = math.Max(peak, q.Y)
		}
		panel := LinePanel{
			Title:  fmt.Sprintf("%s · peak %g = %.2f×", s.Name, peak, peak/limit),
			YLabel: fmt.Sprintf("admitted in trailing %s", window),
			Steps:  true,
			Series: []Series{{Name: "busiest key", Points: pts}},
			Limits: []HLine{{Name: fmt.Sprintf("limit (%g)", limit), Y: limit}},
		}
		if i >= len(series)-f.Columns {
			panel.XLabel = "time since start (s)"
		}
		f.Panels = append(f.Panels, panel)
	}
	return f
}

// ZoomFigure draws, over [from, to] seconds only, the busiest-key counts of WindowFigure
// as exact steps, one line per algorithm in its own dash pattern against the limit: a
// boundary event that takes a sliver of the whole run's axis (200 ms of two minutes)
// fills this one.
func ZoomFigure(meta Meta, series []Series, limit float64, window time.Duration, from, to float64) *Figure {
	return &Figure{Name: "window-zoom", Meta: meta, Panels: []Panel{LinePanel{
		XLabel: "time since start (s)",
		YLabel: fmt.Sprintf("admitted in trailing %s (requests)", window),
		Steps:  true,
		Series: series,
		Limits: []HLine{{Name: fmt.Sprintf("limit (%g)", limit), Y: limit}},
		XRange: [2]float64{from, to},
	}}}
}

// AccuracyFigure draws, per algorithm, the over-admission (peak window count over the
// limit; 1 = never above), the false-allow rate and the false-reject rate, both in percent
// of all requests. A rate that is zero for every algorithm gets no panel: the caption
// says "none" instead.
func AccuracyFigure(meta Meta, algorithms []string, overAdmission, falseAllowRate, falseRejectRate []float64) *Figure {
	if !barsFit(algorithms, 10*vg.Inch) {
		return accuracyDots(meta, algorithms, overAdmission, falseAllowRate, falseRejectRate)
	}
	f := &Figure{Name: "accuracy", Meta: meta, Columns: 1, Panels: []Panel{
		BarPanel{
			Title: "over-admission: most admitted in any trailing window, over the limit", YLabel: "peak ÷ limit (×)",
			Categories: algorithms, ValueFormat: "%.2f",
			Series: []BarSeries{{Name: "over-admission", Values: overAdmission}},
			Limits: []HLine{{Name: "the promise (1×)", Y: 1}},
		},
	}}
	rates, none := accuracyRates(falseAllowRate, falseRejectRate)
	for _, rate := range rates {
		f.Panels = append(f.Panels, BarPanel{
			Title: rate.title, YLabel: "% of all requests",
			Categories: algorithms, ValueFormat: "%.3g",
			Series: []BarSeries{{Name: rate.name, Values: rate.percent}},
		})
	}
	if none != "" {
		f.Meta.Caption += "\n" + none
	}
	f.Height = vg.Length(1.4+2.8*float64(len(f.Panels))) * vg.Inch
	return f
}

// accuracyRate is one rate panel of the accuracy figure, in percent.
type accuracyRate struct {
	title, name string
	percent     []float64
}

// accuracyRates are the false-allow and false-reject panels in percent, leaving out a
// rate that is zero for every algorithm; none is the caption's line naming those.
func accuracyRates(falseAllowRate, falseRejectRate []float64) (rates []accuracyRate, none string) {
	var zeros []string
	for _, rate := range []struct {
		title, name, none string
		values            []float64
	}{
		{"false allows: admitted though the promise forbade them", "false-allow rate", "false allows", falseAllowRate},
		{"false rejects: refused though the promise allowed them", "false-reject rate", "false rejects", falseRejectRate},
	} {
		percent := make([]float64, len(rate.values))
		zero := true
		for i, v := range rate.values {
			percent[i] = v * 100
			zero = zero && v == 0
		}
		if zero {
			zeros = append(zeros, rate.none)
			continue
		}
		rates = append(rates, accuracyRate{rate.title, rate.name, percent})
	}
	if len(zeros) > 0 {
		none = strings.Join(zeros, " and ") + ": none, for every algorithm"
	}
	return rates, none
}

// accuracyDots is the accuracy figure for runs too many for bars: a dot plot, a row per
// run, the over-admission and the two rates side by side on the same rows.
func accuracyDots(meta Meta, algorithms []string, overAdmission, falseAllowRate, falseRejectRate []float64) *Figure {
	f := &Figure{Name: "accuracy", Meta: meta, Width: 13 * vg.Inch, Panels: []Panel{
		DotPanel{
			Title: "over-admission (peak ÷ limit)", XLabel: "× the limit",
			Categories: algorithms,
			Series:     []BarSeries{{Name: "over-admission", Values: overAdmission}},
			Limits:     []VLine{{Name: "the promise (1×)", X: 1}},
		},
	}}
	rates, none := accuracyRates(falseAllowRate, falseRejectRate)
	for _, rate := range rates {
		f.Panels = append(f.Panels, DotPanel{
			Title: rate.title[:strings.Index(rate.title, ":")], XLabel: "% of all requests",
			Categories: algorithms, HideCategories: true,
			Series: []BarSeries{{Name: rate.name, Values: rate.percent}},
		})
	}
	if none != "" {
		f.Meta.Caption += "\n" + none
	}
	f.Columns = len(f.Panels)
	f.Height = DotPanelHeight(len(algorithms)) + 1.3*vg.Inch
	return f
}

// MemoryFigure draws bytes of state per key for each algorithm on a log scale; each
// series is one place the state can live (in-process, Redis, a Redis model).
func MemoryFigure(meta Meta, algorithms []string, series []BarSeries) *Figure {
	if !barsFit(algorithms, 10*vg.Inch) {
		return &Figure{Name: "memory", Meta: meta, Height: DotPanelHeight(len(algorithms)) + 1.3*vg.Inch, Panels: []Panel{DotPanel{
			XLabel: "state per key (bytes, log scale)", Categories: algorithms, LogX: true, Series: series,
		}}}
	}
	return &Figure{Name: "memory", Meta: meta, Height: 5 * vg.Inch, Panels: []Panel{BarPanel{
		YLabel: "state per key (bytes, log scale)", Categories: algorithms, LogY: true,
		ValueFormat: "%.0f", Series: series,
	}}}
}

// BackoffFigure is the retry experiment's two figures side by side: total calls and
// completion time against the number of clients, one line per strategy.
func BackoffFigure(meta Meta, calls, completionSeconds []Series) *Figure {
	return &Figure{Name: "backoff", Meta: meta, Columns: 2, Panels: []Panel{
		LinePanel{Title: "total calls", XLabel: "clients", YLabel: "calls (attempts)", Series: calls},
		LinePanel{Title: "time to finish", XLabel: "clients", YLabel: "completion (s)", Series: completionSeconds},
	}}
}

// HerdFigure draws arrivals per bin over time, one panel per strategy stacked on shared
// axes (same time span, same height scale), so synchronized retries show as tall narrow
// waves and jittered ones as a low smear. Each series is counts per bin at the bins'
// starts closed by a point at the end of its last bin (as BinPoints makes them); a series
// that drained early stops there, on the time axis of the slowest. Long series are
// downsampled keeping each merged bin's highest value, so no wave is smoothed away.
func HerdFigure(meta Meta, arrivals []Series, bin time.Duration) *Figure {
	f := &Figure{Name: "herd", Meta: meta, SharedY: true, SharedX: true,
		Height: vg.Length(1.2+1.75*float64(max(len(arrivals), 1))) * vg.Inch}
	for i, s := range arrivals {
		var pts []Point
		if n := len(s.Points); n > 1 {
			// Downsample the bins only: merged into the last run, the closing point would
			// stretch that run's peak to the end of the panel.
			pts = append(slices.Clip(Downsample(s.Points[:n-1], MaxPoints, Max)), s.Points[n-1])
		} else {
			pts = slices.Clone(s.Points)
		}
		panel := LinePanel{
			Title: s.Name, YLabel: fmt.Sprintf("per %s bin", bin), Steps: true,
			Series: []Series{{Name: s.Name, Points: pts}},
		}
		if i == len(arrivals)-1 {
			panel.XLabel = "time since start (s)"
		}
		f.Panels = append(f.Panels, panel)
	}
	return f
}

// LoadPanel is one strategy's load on the server: its attempts of any kind and its retries
// per bin, as BinPoints makes them.
type LoadPanel struct {
	Name              string
	Attempts, Retries []Point
}

// LoadFigure draws the load each strategy put on the server over time as small multiples:
// one panel per strategy on shared axes, each with every attempt per bin and the retries
// among them, and the server's capacity per bin as a dashed line when capacity > 0. The
// gap between the two lines is the clients' own first tries; what rises above capacity is
// what the strategy made of the failures. The panels are stacked like HerdFigure's.
func LoadFigure(meta Meta, panels []LoadPanel, bin time.Duration, capacity float64) *Figure {
	f := &Figure{Name: "load", Meta: meta, SharedY: true, SharedX: true,
		Height: vg.Length(1.2+1.75*float64(max(len(panels), 1))) * vg.Inch}
	down := func(pts []Point) []Point {
		if n := len(pts); n > 1 {
			return append(slices.Clip(Downsample(pts[:n-1], MaxPoints, Max)), pts[n-1])
		}
		return slices.Clone(pts)
	}
	for i, p := range panels {
		panel := LinePanel{
			Title: p.Name, YLabel: fmt.Sprintf("per %s bin", bin), Steps: true,
			Series: []Series{{Name: "all attempts", Points: down(p.Attempts)}, {Name: "retries", Points: down(p.Retries)}},
		}
		if capacity > 0 {
			panel.Limits = []HLine{{Name: fmt.Sprintf("capacity (%g per bin)", capacity), Y: capacity}}
		}
		if i == len(panels)-1 {
			panel.XLabel = "time since start (s)"
		}
		f.Panels = append(f.Panels, panel)
	}
	return f
}

// BinPoints turns counts per bin (bin i covers [i·bin, (i+1)·bin)) into points at each
// bin's start, X in seconds, with a closing zero at the end of the last bin, ready for a
// stepped line. No counts at all draw as one empty bin.
func BinPoints(counts []int64, bin time.Duration) []Point {
	if len(counts) == 0 {
		counts = []int64{0}
	}
	pts := make([]Point, 0, len(counts)+1)
	for i, v := range counts {
		pts = append(pts, Point{X: (time.Duration(i) * bin).Seconds(), Y: float64(v)})
	}
	return append(pts, Point{X: (time.Duration(len(counts)) * bin).Seconds(), Y: 0})
}

// EffectiveLimitFigure draws the limit a fleet really enforced against xLabel (nodes, or
// time through an outage or a scale-out) with the advertised limit as a reference.
func EffectiveLimitFigure(meta Meta, xLabel string, series []Series, advertised float64) *Figure {
	return &Figure{Name: "effective-limit", Meta: meta, Panels: []Panel{LinePanel{
		XLabel: xLabel, YLabel: "effective limit (requests per window)", Series: series,
		Limits: []HLine{{Name: fmt.Sprintf("advertised (%g)", advertised), Y: advertised}},
	}}}
}

// KeyingFigure draws, per category (a keying policy, or an algorithm under one keying),
// the share of legitimate requests refused and the share of attacker requests admitted,
// in percent: a good key keeps both low. A nil attackerAdmitRate (a run without
// attackers) leaves that series out.
func KeyingFigure(meta Meta, policies []string, legitRejectRate, attackerAdmitRate []float64) *Figure {
	pct := func(v []float64) []float64 {
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = x * 100
		}
		return out
	}
	series := []BarSeries{{Name: "legit refused", Values: pct(legitRejectRate)}}
	if attackerAdmitRate != nil {
		series = append(series, BarSeries{Name: "attacker admitted", Values: pct(attackerAdmitRate)})
	}
	if !barsFit(policies, 10*vg.Inch) {
		return &Figure{Name: "keying", Meta: meta, Height: DotPanelHeight(len(policies)) + 1.3*vg.Inch, Panels: []Panel{DotPanel{
			XLabel: "share of the class's requests (%)", Categories: policies, Series: series,
		}}}
	}
	return &Figure{Name: "keying", Meta: meta, Panels: []Panel{BarPanel{
		YLabel: "share of the class's requests (%)", Categories: policies, ValueFormat: "%.1f",
		Series: series,
	}}}
}

// WorstCaseFigure draws the worst-case curve of each algorithm: the most it admitted for
// one key in any window of length T, against T in seconds, with the advertised limit L as
// a dashed line and T = W marked. A curve above the limit line at T = W is the promise
// broken by traffic shaped to break it.
func WorstCaseFigure(meta Meta, curves []Series, limit float64, window time.Duration) *Figure {
	w := window.Seconds()
	return &Figure{Name: "worst-case", Meta: meta, Panels: []Panel{LinePanel{
		XLabel:  "window length T (s)",
		YLabel:  "most admitted in one window of length T (requests)",
		Series:  curves,
		Markers: true,
		Limits:  []HLine{{Name: fmt.Sprintf("limit L = %g per %s", limit, window), Y: limit}},
		Spans:   []Span{{Name: fmt.Sprintf("T = W = %s", window), From: w, To: w}},
	}}}
}

// Curves is one panel of a SweepFigure: its title and its lines.
type Curves struct {
	Title  string
	Series []Series
}

// SweepFigure draws a metric against a swept parameter, one panel per combination of the
// other parameters' values, all on the same axes so heights and positions compare
// across panels, with a marker at every grid point. logX puts the parameter on a log
// scale, for values that span orders of magnitude.
func SweepFigure(meta Meta, name, xLabel, yLabel string, panels []Curves, logX bool) *Figure {
	cols := min(len(panels), 3)
	rows := (len(panels) + max(cols, 1) - 1) / max(cols, 1)
	f := &Figure{Name: name, Meta: meta, Columns: cols, SharedX: true, SharedY: true}
	if rows > 1 {
		f.Height = vg.Length(1.6+3.2*float64(rows)) * vg.Inch
	}
	for _, p := range panels {
		f.Panels = append(f.Panels, LinePanel{
			Title: p.Title, XLabel: xLabel, YLabel: yLabel, Series: p.Series, Markers: true, LogX: logX,
		})
	}
	return f
}
