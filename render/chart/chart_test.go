package chart

import (
	"bytes"
	"flag"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot/vg"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func TestDownsample(t *testing.T) {
	pts := make([]Point, 10)
	for i := range pts {
		pts[i] = Point{X: float64(i), Y: float64(i % 4)}
	}
	if got := Downsample(pts, 10, Mean); len(got) != 10 {
		t.Fatalf("short series changed: %v", got)
	}
	mean := Downsample(pts, 4, Mean)
	// Runs of 3: {0,1,2} {3,0,1} {2,3,0} {1}.
	want := []Point{{0, 1}, {3, 4.0 / 3}, {6, 5.0 / 3}, {9, 1}}
	if len(mean) != len(want) {
		t.Fatalf("mean = %v, want %v", mean, want)
	}
	for i := range want {
		if mean[i].X != want[i].X || math.Abs(mean[i].Y-want[i].Y) > 1e-12 {
			t.Fatalf("mean = %v, want %v", mean, want)
		}
	}
	peak := Downsample(pts, 4, Max)
	for i, w := range []float64{2, 3, 3, 1} {
		if peak[i].Y != w {
			t.Fatalf("max = %v", peak)
		}
	}
	long := make([]Point, 100000)
	long[54321].Y = 7
	got := Downsample(long, MaxPoints, Max)
	if len(got) > MaxPoints {
		t.Fatalf("%d points after downsampling to %d", len(got), MaxPoints)
	}
	found := false
	for _, p := range got {
		found = found || p.Y == 7
	}
	if !found {
		t.Fatal("Max lost the peak")
	}
}

func synthetic(n int, f func(i int) float64) []Point {
	pts := make([]Point, n)
	for i := range pts {
		pts[i] = Point{X: float64(i), Y: f(i)}
	}
	return pts
}

var meta = Meta{Title: "synthetic figure", Caption: "scenario synthetic · seed 7 · policy 100 per 1m0s"}

// figures builds every figure kind on synthetic data, as the other experiments will.
func figures() []*Figure {
	algs := []string{"fixed-window", "sliding-log", "token-bucket"}
	return []*Figure{
		TimelineFigure(meta, []Run{
			{Name: "fixed-window", Admitted: synthetic(1200, func(i int) float64 { return float64(i % 50) }), Refused: synthetic(1200, func(i int) float64 { return float64(i % 7) })},
			{Name: "sliding-log", Admitted: synthetic(1200, func(int) float64 { return 40 }), Refused: synthetic(1200, func(int) float64 { return 9 })},
		}, 100*time.Millisecond),
		WindowFigure(meta, []Series{
			{Name: "fixed-window", Points: synthetic(600, func(i int) float64 { return float64(min(i, 200)) })},
			{Name: "sliding-log", Points: synthetic(600, func(i int) float64 { return float64(min(i, 100)) })},
		}, 100, time.Minute),
		AccuracyFigure(meta, algs, []float64{2, 1, 1.2}, []float64{0.5, 0, 0.2}, []float64{0, 0, 0.0187}),
		MemoryFigure(meta, algs, []BarSeries{{Name: "in-process", Values: []float64{16, 2096, 16}}, {Name: "redis (model)", Values: []float64{72, 6400, 0}}}),
		BackoffFigure(meta,
			[]Series{{Name: "none", Points: synthetic(10, func(i int) float64 { return float64(i * i * 100) })}, {Name: "full-jitter", Points: synthetic(10, func(i int) float64 { return float64(i * 150) })}},
			[]Series{{Name: "none", Points: synthetic(10, func(i int) float64 { return float64(i * 3) })}, {Name: "full-jitter", Points: synthetic(10, func(i int) float64 { return float64(i) })}}),
		HerdFigure(meta, []Series{{Name: "exponential", Points: synthetic(3000, func(i int) float64 {
			if i%100 < 3 {
				return 1000
			}
			return 0
		})}}, 10*time.Millisecond),
		EffectiveLimitFigure(meta, "nodes", []Series{{Name: "local L/N, static", Points: synthetic(10, func(i int) float64 { return 100 })}, {Name: "local L each", Points: synthetic(10, func(i int) float64 { return float64(100 * (i + 1)) })}}, 100),
		KeyingFigure(meta, []string{"ip", "user", "xff-leftmost"}, []float64{0.4, 0.01, 0.02}, []float64{0.05, 0.02, 0.97}),
		WorstCaseFigure(meta, []Series{
			{Name: "fixed-window", Points: []Point{{7.5, 200}, {60, 200}, {120, 300}}},
			{Name: "sliding-log", Points: []Point{{7.5, 100}, {60, 100}, {120, 200}}},
		}, 100, time.Minute),
		SweepFigure(meta, "sweep-synthetic", "policy.window (s)", "over_admission (× the limit)", []Curves{
			{Title: "policy.limit=50", Series: []Series{{Name: "fixed-window", Points: []Point{{1, 2}, {10, 2}, {600, 1}}}, {Name: "gcra", Points: []Point{{1, 1.2}, {10, 1.02}, {600, 1}}}}},
			{Title: "policy.limit=100", Series: []Series{{Name: "fixed-window", Points: []Point{{1, 2}, {10, 2}, {600, 1}}}, {Name: "gcra", Points: []Point{{1, 1.2}, {10, 1.02}, {600, 1}}}}},
		}, true),
	}
}

// Series lying on one another are told apart by their markers: every name of a figure
// takes a (colour, marker) pair no other name has, up to 56 names.
func TestMarkersAndColoursArePairedUniquely(t *testing.T) {
	l := newLegend()
	seen := map[[2]string]string{}
	for i := range len(palette) * len(markers) {
		name := strconv.Itoa(i)
		c, _ := l.color(name)
		pair := [2]string{fmt.Sprint(c), fmt.Sprintf("%T", l.marker(name))}
		if other, ok := seen[pair]; ok {
			t.Fatalf("series %s and %s share colour and marker %v", other, name, pair)
		}
		seen[pair] = name
	}
	if fmt.Sprintf("%T", l.marker("0")) == fmt.Sprintf("%T", l.marker("1")) {
		t.Error("the first two series share a marker")
	}
}

func render(t *testing.T, f *Figure, format string) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := f.Render(&b, format); err != nil {
		t.Fatalf("%s.%s: %v", f.Name, format, err)
	}
	return b.Bytes()
}

func TestEveryFigureRendersWithTitleLabelsLegendAndCaption(t *testing.T) {
	for _, f := range figures() {
		t.Run(f.Name, func(t *testing.T) {
			svg := string(render(t, f, "svg"))
			for _, want := range []string{meta.Title, "scenario synthetic · seed 7", "font-family:'Liberation Sans',Arial,Helvetica,sans-serif;"} {
				if !strings.Contains(svg, want) {
					t.Errorf("SVG lacks %q", want)
				}
			}
			if strings.Contains(svg, "font-family:Liberation Serif") {
				t.Error("SVG uses a serif face")
			}
			for _, p := range f.Panels {
				var labels []string
				switch p := p.(type) {
				case LinePanel:
					labels = []string{p.XLabel, p.YLabel}
					for _, s := range p.Series {
						labels = append(labels, s.Name)
					}
				case BarPanel:
					labels = append([]string{p.YLabel}, p.Categories...)
					for _, s := range p.Series {
						labels = append(labels, s.Name)
					}
				}
				for _, l := range labels {
					if !strings.Contains(svg, ">"+htmlEscape(l)+"<") {
						t.Errorf("SVG lacks the text %q", l)
					}
				}
			}
		})
	}
}

// Rasterizing is slow under -race, so one figure stands for all in PNG.
func TestPNGIsTenInchesAt96DPI(t *testing.T) {
	f := figures()[3] // memory: 10 × 5 inches
	img, err := png.Decode(bytes.NewReader(render(t, f, "png")))
	if err != nil {
		t.Fatal(err)
	}
	if w, h := img.Bounds().Dx(), img.Bounds().Dy(); w != 960 || h != 480 {
		t.Errorf("PNG is %d×%d pixels, want 960×480", w, h)
	}
}

// A rate no algorithm has gets no panel of zeros: the caption says "none".
func TestAccuracyLeavesOutAllZeroRates(t *testing.T) {
	algs := []string{"a", "b"}
	f := AccuracyFigure(meta, algs, []float64{2, 1}, []float64{0.5, 0}, []float64{0, 0})
	if len(f.Panels) != 2 || !strings.Contains(f.Panels[1].(BarPanel).Title, "false allows") {
		t.Fatalf("panels %+v", f.Panels)
	}
	if !strings.HasSuffix(f.Meta.Caption, "\nfalse rejects: none, for every algorithm") {
		t.Errorf("caption %q", f.Meta.Caption)
	}
	f = AccuracyFigure(meta, algs, []float64{1, 1}, []float64{0, 0}, []float64{0, 0.001})
	if len(f.Panels) != 2 || !strings.Contains(f.Panels[1].(BarPanel).Title, "false rejects") ||
		!strings.HasSuffix(f.Meta.Caption, "\nfalse allows: none, for every algorithm") {
		t.Errorf("panels %d, caption %q", len(f.Panels), f.Meta.Caption)
	}
	if f := AccuracyFigure(meta, algs, []float64{1, 1}, []float64{0, 0}, []float64{0, 0}); len(f.Panels) != 1 ||
		!strings.HasSuffix(f.Meta.Caption, "false allows and false rejects: none, for every algorithm") {
		t.Errorf("panels %d, caption %q", len(f.Panels), f.Meta.Caption)
	}
}

// The window chart is small multiples, one panel per algorithm titled with its peak, on
// shared axes; the zoom keeps to its range.
func TestWindowSmallMultiplesAndZoom(t *testing.T) {
	series := []Series{
		{Name: "fixed-window", Points: []Point{{0, 0}, {59.9, 100}, {60.1, 200}, {120, 200}}},
		{Name: "gcra", Points: []Point{{0, 0}, {59.9, 100}, {120, 100}}},
	}
	f := WindowFigure(meta, series, 100, time.Minute)
	if len(f.Panels) != 2 || !f.SharedX || !f.SharedY || f.Columns != 2 {
		t.Fatalf("figure %+v", f)
	}
	if title := f.Panels[0].(LinePanel).Title; title != "fixed-window · peak 200 = 2.00×" {
		t.Errorf("title %q", title)
	}
	zoom := ZoomFigure(meta, series, 100, time.Minute, 59.7, 60.3)
	svg := string(render(t, zoom, "svg"))
	for _, tick := range []string{">59.8<", ">60<", ">60.2<"} {
		if !strings.Contains(svg, tick) {
			t.Errorf("zoom lacks the tick %s", tick)
		}
	}
	if strings.Contains(svg, ">100<") && !strings.Contains(svg, "limit (100)") {
		t.Error("no limit line")
	}
	if strings.Contains(svg, ">120<") {
		t.Error("the zoom's axis reaches the end of the run")
	}
}

func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "'", "&#39;", "<", "&lt;", ">", "&gt;", `"`, "&#34;").Replace(s)
}

func TestRenderingIsDeterministic(t *testing.T) {
	for i, f := range figures() {
		formats := []string{"svg"}
		if i < 2 {
			// Small pages keep rasterizing quick under -race.
			f.Width, f.Height = 4*vg.Inch, 3*vg.Inch
			formats = Formats
		}
		for _, format := range formats {
			a, b := render(t, f, format), render(t, f, format)
			if !bytes.Equal(a, b) {
				t.Errorf("%s.%s differs between two renderings", f.Name, format)
			}
		}
	}
}

var textX = regexp.MustCompile(`<text x="([-0-9.e+]+)" y="[-0-9.e+]+" transform="scale\(1, -1\)"\n\tstyle="[^"]*">([^<]*)</text>`)

// The legend lives in its own column: every legend entry starts to the right of every
// tick label of the panels.
func TestLegendDoesNotCoverData(t *testing.T) {
	f := ZoomFigure(meta, []Series{
		{Name: "fixed-window", Points: synthetic(100, func(i int) float64 { return 200 })},
		{Name: "gcra", Points: synthetic(100, func(i int) float64 { return 100 })},
	}, 100, time.Minute, 0, 99)
	svg := string(render(t, f, "svg"))
	legendX, tickX := math.Inf(1), math.Inf(-1)
	for _, m := range textX.FindAllStringSubmatch(svg, -1) {
		x, _ := strconv.ParseFloat(m[1], 64)
		switch {
		case m[2] == "fixed-window" || m[2] == "gcra" || strings.HasPrefix(m[2], "limit"):
			legendX = math.Min(legendX, x)
		case m[2] == "99" || m[2] == "100" || m[2] == "80":
			tickX = math.Max(tickX, x)
		}
	}
	if math.IsInf(legendX, 0) || math.IsInf(tickX, 0) {
		t.Fatalf("legend x %v, tick x %v: texts not found", legendX, tickX)
	}
	if legendX <= tickX {
		t.Errorf("legend starts at x=%v, left of the data's last tick at x=%v", legendX, tickX)
	}
}

func TestBadFiguresAreErrorsNotPanics(t *testing.T) {
	bad := []*Figure{
		{Name: "empty"},
		{Name: "no-lines", Panels: []Panel{LinePanel{}}},
		{Name: "ragged-bars", Panels: []Panel{BarPanel{Categories: []string{"a", "b"}, Series: []BarSeries{{Name: "x", Values: []float64{1}}}}}},
		{Name: "log-of-zeros", Panels: []Panel{BarPanel{LogY: true, Categories: []string{"a"}, Series: []BarSeries{{Name: "x", Values: []float64{0}}}}}},
	}
	for _, f := range bad {
		if err := f.Render(&bytes.Buffer{}, "svg"); err == nil {
			t.Errorf("%s: no error", f.Name)
		}
	}
	if err := figures()[0].Render(&bytes.Buffer{}, "gif"); err == nil || !strings.Contains(err.Error(), `"gif"`) {
		t.Errorf("unknown format: %v", err)
	}
}

func TestGoldenSVG(t *testing.T) {
	f := figures()[1]
	got := render(t, f, "svg")
	path := filepath.Join("testdata", "window.svg")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./report/chart -update creates it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("SVG differs from %s (go test ./report/chart -update rewrites it)", path)
	}
}

// Whatever numbers an experiment hands over — NaN, infinities, negatives on a log axis —
// drawing returns an error or a chart, never a panic.
func FuzzRender(f *testing.F) {
	f.Add(1.0, 2.0, 3.0, false)
	f.Add(0.0, 0.0, 0.0, true)
	f.Add(math.NaN(), 1.0, -1.0, true)
	f.Add(math.Inf(1), 1e300, -1e-300, false)
	f.Add(math.MaxFloat64, -math.MaxFloat64, 1.0, false)
	f.Add(math.MaxFloat64, 1.0, 1.0, true)
	f.Fuzz(func(t *testing.T, a, b, c float64, logY bool) {
		figs := []*Figure{
			{Name: "lines", Meta: meta, Panels: []Panel{LinePanel{LogY: logY, Steps: true,
				Series: []Series{{Name: "s", Points: []Point{{0, a}, {1, b}, {2, c}}}},
				Limits: []HLine{{Name: "limit", Y: c}}}}},
			{Name: "bars", Meta: meta, Panels: []Panel{BarPanel{LogY: logY, ValueFormat: "%.2f",
				Categories: []string{"x", "y"}, Series: []BarSeries{{Name: "s", Values: []float64{a, b}}},
				Limits: []HLine{{Name: "limit", Y: c}}}}},
			HerdFigure(meta, []Series{{Name: "h", Points: []Point{{0, a}, {1, b}, {2, c}}}, {Name: "g", Points: []Point{{a, 1}, {b, 2}}}}, time.Millisecond),
			KeyingFigure(meta, []string{"ip", "user"}, []float64{a, b}, []float64{c, a}),
			{Name: "marked", Meta: meta, Panels: []Panel{LinePanel{LogX: logY, Markers: true,
				Series: []Series{{Name: "s", Points: []Point{{a, 1}, {b, 2}, {c, 3}}}},
				Spans:  []Span{{Name: "T = W", From: a, To: a}}}}},
			{Name: "spans", Meta: meta, Panels: []Panel{LinePanel{LogY: logY, Steps: true,
				Series: []Series{{Name: "s", Points: []Point{{0, a}, {1, b}, {2, c}}}},
				Spans:  []Span{{Name: "down", From: a, To: b}, {Name: "scaled", From: c, To: c}}}}},
		}
		for _, fig := range figs {
			_ = fig.Render(&bytes.Buffer{}, "svg")
		}
	})
}

// A caption line wider than the page (a long command) is broken at spaces, not cut off.
func TestLongCaptionLinesWrap(t *testing.T) {
	sty := textStyle(sans, 9.5, gray)
	long := strings.TrimSpace(strings.Repeat("--param policy.window=10s,30s,1m ", 12))
	lines := wrap(sty, long, 4*vg.Inch)
	if len(lines) < 2 || strings.Join(lines, " ") != long {
		t.Fatalf("wrapped into %q", lines)
	}
	for _, l := range lines {
		if w := sty.Rectangle(l).Size().X; w > 4*vg.Inch {
			t.Errorf("line %q is %v wide, more than 4 inches", l, w)
		}
	}
	if got := wrap(sty, "short", 4*vg.Inch); len(got) != 1 || got[0] != "short" {
		t.Errorf("short line wrapped into %q", got)
	}
}
