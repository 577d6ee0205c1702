// Package chart draws rlsim's figures with gonum.org/v1/plot from plain data: series of
// points, groups of bars and reference lines. It knows nothing of scenarios or limiters, so
// any experiment can be drawn by filling a Figure (or calling one of the figure functions
// in figures.go) from its own results.
//
// Every figure has a title, axis labels with units, a legend in its own column (so it never
// covers data), a sans-serif face (Liberation Sans, bundled with gonum) and a caption line
// for the scenario, seed and policy. Rendering is deterministic: the same figure gives the
// same SVG and PNG bytes.
package chart

import (
	"bytes"
	"fmt"
	"html"
	"image/color"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"

	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Formats are the file formats a figure renders to, as --charts names them.
var Formats = []string{"png", "svg"}

// Point is one (x, y) sample.
type Point struct{ X, Y float64 }

// Series is a named line. Points must be in increasing X.
type Series struct {
	Name   string
	Points []Point
}

// BarSeries is one named set of bars: Values[i] is the bar of category i.
type BarSeries struct {
	Name   string
	Values []float64
}

// HLine is a horizontal reference line drawn dashed across a panel, such as the limit.
type HLine struct {
	Name string
	Y    float64
}

// Meta is what every figure states about itself.
type Meta struct {
	// Title is printed above the panels.
	Title string
	// Caption is printed under them: the scenario, seed and policy the data came from.
	Caption string
}

// Panel is one plot of a figure.
type Panel interface {
	// build makes the panel's plot and registers its legend entries.
	build(l *legend) (*plot.Plot, error)
}

// Figure is a titled grid of panels sharing one legend and one caption.
type Figure struct {
	// Name is the file stem the figure is written under ("window-timeline" → window-timeline.svg).
	Name string
	Meta Meta
	// Panels are laid out left to right, top to bottom, Columns to a row (default 1).
	Panels  []Panel
	Columns int
	// SharedY gives every panel the same Y range, so heights compare across panels;
	// SharedX the same X range, so times do.
	SharedY, SharedX bool
	// Width and Height are the page size; zero means 10 × 5.6 inches.
	Width, Height vg.Length
}

// dpi is the PNG resolution: 10 inches become 960 pixels.
const dpi = 96

var (
	sans      = font.Font{Typeface: "Liberation", Variant: "Sans"}
	sansBold  = font.Font{Typeface: "Liberation", Variant: "Sans", Weight: xfont.WeightBold}
	gray      = color.Gray{Y: 0x55}
	limitGray = color.Gray{Y: 0x20}
)

// palette is Okabe and Ito's colour-blind safe set, in the order series take them.
var palette = []color.Color{
	color.RGBA{0x00, 0x72, 0xB2, 0xFF}, // blue
	color.RGBA{0xD5, 0x5E, 0x00, 0xFF}, // vermillion
	color.RGBA{0x00, 0x9E, 0x73, 0xFF}, // bluish green
	color.RGBA{0xCC, 0x79, 0xA7, 0xFF}, // reddish purple
	color.RGBA{0xE6, 0x9F, 0x00, 0xFF}, // orange
	color.RGBA{0x56, 0xB4, 0xE9, 0xFF}, // sky blue
	color.RGBA{0xF0, 0xE4, 0x42, 0xFF}, // yellow
	color.RGBA{0x00, 0x00, 0x00, 0xFF}, // black
}

// markers are the point glyphs of LinePanel.Markers, in the order series take them. Seven
// shapes against eight colours: the pairs repeat only after 56 series, and series drawn
// on top of one another still show each its own shape.
var markers = []draw.GlyphDrawer{
	draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.SquareGlyph{}, draw.RingGlyph{},
	draw.PyramidGlyph{}, draw.BoxGlyph{}, draw.CrossGlyph{},
}

// legend gives each series name one colour (and marker) across the panels of a figure and
// collects the entries in the order they first appear.
type legend struct {
	colors  map[string]color.Color
	slots   map[string]int // the order in which names took their colour
	entries []legendEntry
}

type legendEntry struct {
	name  string
	thumb plot.Thumbnailer
}

func newLegend() *legend { return &legend{colors: map[string]color.Color{}, slots: map[string]int{}} }

func (l *legend) color(name string) (color.Color, bool) {
	if c, ok := l.colors[name]; ok {
		return c, false
	}
	c := palette[len(l.colors)%len(palette)]
	l.slots[name] = len(l.colors)
	l.colors[name] = c
	return c, true
}

// marker is the glyph of a name that has taken its colour.
func (l *legend) marker(name string) draw.GlyphDrawer {
	return markers[l.slots[name]%len(markers)]
}

func (l *legend) add(name string, thumb plot.Thumbnailer) {
	for _, e := range l.entries {
		if e.name == name {
			return
		}
	}
	l.entries = append(l.entries, legendEntry{name, thumb})
}

// Render writes the figure as format ("png" or "svg") to w.
func (f *Figure) Render(w io.Writer, format string) error {
	width, height := f.size()
	switch format {
	case "svg":
		c := vgsvg.New(width, height)
		laid, err := f.draw(draw.New(c))
		if err != nil {
			return err
		}
		var buf bytes.Buffer
		if _, err := c.WriteTo(&buf); err != nil {
			return err
		}
		// gonum names the face it measured with; a viewer without Liberation Sans would
		// fall back to a serif face, so name the usual metric-compatible sans faces too.
		out := strings.ReplaceAll(buf.String(), "font-family:Liberation Sans;",
			"font-family:'Liberation Sans',Arial,Helvetica,sans-serif;")
		_, err = io.WriteString(w, centerTitle(out, laid.titleLines, width))
		return err
	case "png":
		c := vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(dpi), vgimg.UseBackgroundColor(color.White))
		if _, err := f.draw(draw.New(c)); err != nil {
			return err
		}
		_, err := vgimg.PngCanvas{Canvas: c}.WriteTo(w)
		return err
	}
	return fmt.Errorf("chart %s: unknown format %q (want png or svg)", f.Name, format)
}

// size is the figure's page: Width and Height, 10 × 5.6 inches where zero.
func (f *Figure) size() (width, height vg.Length) {
	width, height = f.Width, f.Height
	if width == 0 {
		width = 10 * vg.Inch
	}
	if height == 0 {
		height = 5.6 * vg.Inch
	}
	return width, height
}

// centerTitle anchors the title's lines of an SVG at the page's centre. gonum places a
// centred text by its left end, from Liberation Sans's widths: a viewer that draws the
// title in a wider face (ImageMagick's own renderer, any without Liberation Sans) would
// run it past the right edge, and one anchored in the middle grows both ways, inside the
// room titleShare leaves.
func centerTitle(svg string, lines []string, width vg.Length) string {
	for _, line := range lines {
		re := regexp.MustCompile(`<text x="[-0-9.e]+"( y="[-0-9.e]+" transform="scale\(1, -1\)"\s*style=")([^"]*font-weight:bold[^"]*font-size:15px">` +
			regexp.QuoteMeta(html.EscapeString(line)) + `</text>)`)
		svg = re.ReplaceAllString(svg, `<text x="`+strconv.FormatFloat(float64(width)/2, 'f', -1, 64)+`"${1}text-anchor:middle;${2}`)
	}
	return svg
}

func textStyle(f font.Font, size vg.Length, c color.Color) text.Style {
	return text.Style{Color: c, Font: font.From(f, size), Handler: plot.DefaultTextHandler}
}

// titleShare is the part of a figure's width its title may take: the rest is room for a
// viewer whose sans face is wider than Liberation Sans's metrics (ImageMagick, librsvg
// and browsers without it fall back to DejaVu Sans, about 11% wider in bold), so the title never
// runs past the frame.
const titleShare = 0.85

// laidOut is where a figure put its parts: for the checks of Problems.
type laidOut struct {
	titleLines []string
	titleWidth vg.Length // widest line of the title
	room       vg.Length // the width a title line may take
	tiles      []draw.Canvas
	plots      []*plot.Plot
}

func (f *Figure) draw(dc draw.Canvas) (*laidOut, error) {
	if len(f.Panels) == 0 {
		return nil, fmt.Errorf("chart %s: no panels", f.Name)
	}
	out := &laidOut{}
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	pad := vg.Points(8)
	dc = draw.Crop(dc, pad, -pad, pad, -pad)

	title := textStyle(sansBold, 15, color.Black)
	title.XAlign = draw.XCenter
	title.YAlign = draw.YTop
	out.room = vg.Length(titleShare) * (dc.Max.X - dc.Min.X)
	out.titleLines = wrap(title, f.Meta.Title, out.room)
	for i, line := range out.titleLines {
		if i > 0 {
			dc.Max.Y -= title.Rectangle(line).Size().Y * 0.15 // leading
		}
		dc.FillText(title, vg.Point{X: dc.Center().X, Y: dc.Max.Y}, line)
		size := title.Rectangle(line).Size()
		out.titleWidth = max(out.titleWidth, size.X)
		dc.Max.Y -= size.Y
	}
	dc.Max.Y -= pad

	caption := textStyle(sans, 9.5, gray)
	caption.YAlign = draw.YBottom
	var lines []string
	for _, l := range strings.Split(f.Meta.Caption, "\n") {
		lines = append(lines, wrap(caption, l, dc.Max.X-dc.Min.X)...)
	}
	lineHeight := caption.Rectangle("Mg").Size().Y * 1.2
	for i := range lines {
		line := lines[len(lines)-1-i]
		dc.FillText(caption, vg.Point{X: dc.Min.X, Y: dc.Min.Y + vg.Length(i)*lineHeight}, line)
	}
	dc.Min.Y += vg.Length(len(lines))*lineHeight + pad/2

	leg := newLegend()
	plots := make([]*plot.Plot, len(f.Panels))
	for i, p := range f.Panels {
		pl, err := p.build(leg)
		if err != nil {
			return nil, fmt.Errorf("chart %s: panel %d: %w", f.Name, i, err)
		}
		if !finite(pl.X.Min) || !finite(pl.X.Max) || !finite(pl.Y.Min) || !finite(pl.Y.Max) {
			return nil, fmt.Errorf("chart %s: panel %d: values too large to draw", f.Name, i)
		}
		styleFonts(pl)
		plots[i] = pl
	}
	if f.SharedY {
		shareY(plots)
	}
	if f.SharedX {
		shareX(plots)
	}

	// The legend gets its own column to the right of the panels, so it can never sit on
	// top of a line or a bar.
	if len(leg.entries) > 0 {
		l := plot.NewLegend()
		l.TextStyle = textStyle(sans, 11, color.Black)
		l.Top, l.Left = true, true
		l.Padding = vg.Points(3)
		l.ThumbnailWidth = vg.Points(22)
		for _, e := range leg.entries {
			l.Add(e.name, e.thumb)
		}
		var textWidth vg.Length
		for _, e := range leg.entries {
			textWidth = max(textWidth, l.TextStyle.Rectangle(e.name).Size().X)
		}
		colWidth := l.ThumbnailWidth + textWidth + 3*pad
		legendCanvas := dc
		legendCanvas.Min.X = dc.Max.X - colWidth + pad
		legendCanvas.Max.Y -= pad
		l.Draw(legendCanvas)
		dc.Max.X -= colWidth
	}

	cols := max(f.Columns, 1)
	rows := (len(plots) + cols - 1) / cols
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Points(14), PadY: vg.Points(10)}
	// A panel's title wider than its tile would run into its neighbours': break it at
	// spaces and after a run's "@" ("sliding-window@" / "atomic-10n-50ms").
	tileWidth := (dc.Max.X - dc.Min.X - vg.Length(cols-1)*tiles.PadX) / vg.Length(cols)
	for _, pl := range plots {
		pl.Title.Text = strings.Join(wrapTitle(pl.Title.TextStyle, pl.Title.Text, tileWidth), "\n")
	}
	grid := make([][]*plot.Plot, rows)
	for r := range grid {
		grid[r] = make([]*plot.Plot, cols)
		for c := range cols {
			if i := r*cols + c; i < len(plots) {
				grid[r][c] = plots[i]
			}
		}
	}
	canvases := plot.Align(grid, tiles, dc)
	for r := range grid {
		for c, pl := range grid[r] {
			if pl != nil {
				pl.Draw(canvases[r][c])
				out.tiles = append(out.tiles, canvases[r][c])
				out.plots = append(out.plots, pl)
			}
		}
	}
	return out, nil
}

// wrap breaks line at spaces into lines no wider than width (a long command in a
// caption); a single word wider than width stays whole.
func wrap(sty text.Style, line string, width vg.Length) []string {
	if sty.Rectangle(line).Size().X <= width {
		return []string{line}
	}
	var out []string
	cur := ""
	for _, word := range strings.Split(line, " ") {
		next := word
		if cur != "" {
			next = cur + " " + word
		}
		if cur != "" && sty.Rectangle(next).Size().X > width {
			out = append(out, cur)
			next = word
		}
		cur = next
	}
	return append(out, cur)
}

// wrapTitle breaks a panel's title into lines no wider than width, at spaces or after an
// "@"; a piece wider than width stays whole.
func wrapTitle(sty text.Style, title string, width vg.Length) []string {
	if title == "" || sty.Rectangle(title).Size().X <= width {
		return []string{title}
	}
	var out []string
	for _, line := range wrap(sty, strings.ReplaceAll(title, "@", "@ "), width) {
		out = append(out, strings.ReplaceAll(line, "@ ", "@"))
	}
	return out
}

func styleFonts(p *plot.Plot) {
	p.Title.TextStyle.Font = font.From(sansBold, 12)
	p.X.Label.TextStyle.Font = font.From(sans, 11)
	p.Y.Label.TextStyle.Font = font.From(sans, 11)
	p.X.Tick.Label.Font = font.From(sans, 10)
	p.Y.Tick.Label.Font = font.From(sans, 10)
	p.Legend.TextStyle.Font = font.From(sans, 11)
	p.X.Label.TextStyle.Color = color.Black
	p.Y.Label.TextStyle.Color = color.Black
}

func shareY(plots []*plot.Plot) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, p := range plots {
		lo, hi = math.Min(lo, p.Y.Min), math.Max(hi, p.Y.Max)
	}
	for _, p := range plots {
		p.Y.Min, p.Y.Max = lo, hi
	}
}

func shareX(plots []*plot.Plot) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, p := range plots {
		lo, hi = math.Min(lo, p.X.Min), math.Max(hi, p.X.Max)
	}
	for _, p := range plots {
		p.X.Min, p.X.Max = lo, hi
	}
}

// LinePanel is a plot of lines against a numeric X axis.
type LinePanel struct {
	Title, XLabel, YLabel string
	Series                []Series
	// Limits are dashed horizontal reference lines.
	Limits []HLine
	// Steps draws each point's value flat until the next point, for binned data whose X
	// is the bin's start.
	Steps bool
	// LogY puts Y on a log scale; values ≤ 0 are left out.
	LogY bool
	// LogX puts X on a log scale; values ≤ 0 are left out.
	LogX bool
	// Markers draws a glyph at every point, for lines through a few measured points (a
	// sweep, a curve over window lengths): it shows where the measurements are and tells
	// apart series that lie on one another.
	Markers bool
	// AbsTicks labels Y ticks with their absolute value, for mirrored panels that draw
	// one quantity up and another down.
	AbsTicks bool
	// Spans mark stretches or instants of X (outages, scale-outs) behind the data.
	Spans []Span
	// XRange, when its second value is above its first, is the X axis' range, whatever
	// the data's (a zoom).
	XRange [2]float64
}

func (p LinePanel) build(leg *legend) (*plot.Plot, error) {
	pl := plot.New()
	pl.Title.Text = p.Title
	pl.X.Label.Text = p.XLabel
	pl.Y.Label.Text = p.YLabel
	pl.Add(plotter.NewGrid())
	pl.Y.Tick.Marker = plainTicks{abs: p.AbsTicks}
	if p.LogY {
		pl.Y.Scale = plot.LogScale{}
		pl.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	pl.X.Tick.Marker = plainTicks{}
	if p.LogX {
		pl.X.Scale = plot.LogScale{}
		pl.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	addSpans(pl, leg, p.Spans)
	// Reference lines go under the data, so a line that runs along the limit stays seen.
	addLimits(pl, leg, p.Limits)
	drawn := 0
	for i, s := range p.Series {
		pts := make(plotter.XYs, 0, len(s.Points))
		for _, q := range s.Points {
			if !finite(q.X) || !finite(q.Y) || p.LogY && q.Y <= 0 || p.LogX && q.X <= 0 {
				continue
			}
			pts = append(pts, plotter.XY{X: q.X, Y: q.Y})
		}
		if len(pts) == 0 {
			continue
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return nil, fmt.Errorf("series %q: %w", s.Name, err)
		}
		c, _ := leg.color(s.Name)
		line.Color = c
		// Later series are drawn thinner, and each in its own dash pattern, so that one
		// lying on another still shows.
		line.Width = vg.Points(max(1.2, 3.0-0.35*float64(i)))
		line.Dashes = seriesDashes[i%len(seriesDashes)]
		if p.Steps {
			line.StepStyle = plotter.PostStep
		}
		pl.Add(line)
		var thumb plot.Thumbnailer = line
		if p.Markers {
			points, err := plotter.NewScatter(pts)
			if err != nil {
				return nil, fmt.Errorf("series %q: %w", s.Name, err)
			}
			points.GlyphStyle = draw.GlyphStyle{Color: c, Radius: vg.Points(3.5), Shape: leg.marker(s.Name)}
			pl.Add(points)
			thumb = markedLine{line, points}
		}
		leg.add(s.Name, thumb)
		drawn++
	}
	if drawn == 0 {
		return nil, fmt.Errorf("no data to draw")
	}
	if p.XRange[1] > p.XRange[0] {
		pl.X.Min, pl.X.Max = p.XRange[0], p.XRange[1]
	}
	if p.LogY {
		if !(pl.Y.Min > 0) {
			return nil, fmt.Errorf("no positive value to draw on a log scale")
		}
		logDecades(&pl.Y)
	}
	if p.LogX {
		if !(pl.X.Min > 0) {
			return nil, fmt.Errorf("no positive X to draw on a log scale")
		}
		logDecades(&pl.X)
	}
	if !p.LogY {
		pl.Y.Min = math.Min(pl.Y.Min, 0)
		if pl.Y.Max <= pl.Y.Min {
			// All zeros: gonum would widen to -1..1 and hide the line on the middle.
			pl.Y.Max = pl.Y.Min + 1
		}
		// Headroom so the highest (and lowest) line is not drawn on the frame.
		pl.Y.Max += 0.08 * (pl.Y.Max - pl.Y.Min)
		if pl.Y.Min < 0 {
			pl.Y.Min -= 0.08 * (pl.Y.Max - pl.Y.Min)
		}
	}
	return pl, nil
}

// markedLine is the legend entry of a line with markers: the line with one glyph on it.
type markedLine struct {
	line   *plotter.Line
	points *plotter.Scatter
}

func (m markedLine) Thumbnail(c *draw.Canvas) {
	m.line.Thumbnail(c)
	m.points.Thumbnail(c)
}

// seriesDashes are the dash patterns the series of a line panel take in turn: solid,
// then ever shorter dashes.
var seriesDashes = [][]vg.Length{
	nil,
	{vg.Points(9), vg.Points(3)},
	{vg.Points(5), vg.Points(3)},
	{vg.Points(2), vg.Points(2)},
	{vg.Points(9), vg.Points(3), vg.Points(2), vg.Points(3)},
	{vg.Points(1), vg.Points(3)},
}

func addLimits(pl *plot.Plot, leg *legend, limits []HLine) {
	for _, h := range limits {
		if !finite(h.Y) {
			continue
		}
		if pl.Y.Scale != nil {
			if _, isLog := pl.Y.Scale.(plot.LogScale); isLog && h.Y <= 0 {
				continue
			}
		}
		hl := hline{HLine: h}
		pl.Add(hl)
		pl.Y.Min = math.Min(pl.Y.Min, h.Y)
		pl.Y.Max = math.Max(pl.Y.Max, h.Y)
		leg.add(h.Name, hl)
	}
}

// hline draws a dashed reference line across the data area.
type hline struct{ HLine }

func (h hline) style() draw.LineStyle {
	return draw.LineStyle{Color: limitGray, Width: vg.Points(1.6), Dashes: []vg.Length{vg.Points(6), vg.Points(4)}}
}

func (h hline) Plot(c draw.Canvas, p *plot.Plot) {
	_, y := p.Transforms(&c)
	yy := y(h.Y)
	c.StrokeLine2(h.style(), c.Min.X, yy, c.Max.X, yy)
}

func (h hline) Thumbnail(c *draw.Canvas) {
	y := c.Center().Y
	c.StrokeLine2(h.style(), c.Min.X, y, c.Max.X, y)
}

// BarPanel is grouped bars: one group per category, one bar per series in each group.
type BarPanel struct {
	Title, YLabel string
	Categories    []string
	Series        []BarSeries
	Limits        []HLine
	// LogY puts Y on a log scale; bars then rise from the axis' bottom and values ≤ 0 are
	// not drawn.
	LogY bool
	// ValueFormat, when set, prints each bar's value above it (fmt verb, e.g. "%.2f").
	ValueFormat string
}

func (p BarPanel) build(leg *legend) (*plot.Plot, error) {
	if len(p.Categories) == 0 || len(p.Series) == 0 {
		return nil, fmt.Errorf("no bars to draw")
	}
	for _, s := range p.Series {
		if len(s.Values) != len(p.Categories) {
			return nil, fmt.Errorf("series %q has %d values for %d categories", s.Name, len(s.Values), len(p.Categories))
		}
	}
	pl := plot.New()
	pl.Title.Text = p.Title
	pl.Y.Label.Text = p.YLabel
	pl.NominalX(p.Categories...)
	pl.X.Tick.Label.Rotation = 0
	grid := plotter.NewGrid()
	grid.Vertical.Color = nil
	pl.Add(grid)
	b := &bars{panel: p}
	for _, s := range p.Series {
		c, _ := leg.color(s.Name)
		b.colors = append(b.colors, c)
		leg.add(s.Name, barThumb{c})
	}
	if p.LogY {
		pl.Y.Scale = plot.LogScale{}
		pl.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	pl.Add(b)
	addLimits(pl, leg, p.Limits)
	if p.LogY {
		if math.IsInf(pl.Y.Min, 0) || pl.Y.Min <= 0 {
			return nil, fmt.Errorf("no positive value to draw on a log scale")
		}
		pl.Y.Max *= 1.5 // room for the value labels
		logDecades(&pl.Y)
	} else {
		pl.Y.Tick.Marker = plainTicks{}
		pl.Y.Min = math.Min(pl.Y.Min, 0)
		if pl.Y.Max <= 0 {
			pl.Y.Max = 1
		}
		pl.Y.Max *= 1.12
	}
	return pl, nil
}

// bars is the grouped-bar plotter. gonum's BarChart always rises from zero, which a log
// axis cannot show, so this one rises from the axis' bottom.
type bars struct {
	panel  BarPanel
	colors []color.Color
}

const groupWidth = 0.8 // of one category's slot

func (b *bars) DataRange() (xmin, xmax, ymin, ymax float64) {
	ymin, ymax = math.Inf(1), math.Inf(-1)
	for _, s := range b.panel.Series {
		for _, v := range s.Values {
			if !finite(v) || b.panel.LogY && v <= 0 {
				continue
			}
			ymin, ymax = math.Min(ymin, v), math.Max(ymax, v)
		}
	}
	if !b.panel.LogY {
		ymin = math.Min(ymin, 0)
	}
	if math.IsInf(ymax, -1) {
		ymin, ymax = 0, 0
		if b.panel.LogY {
			ymin, ymax = math.Inf(1), math.Inf(-1)
		}
	}
	return -0.5, float64(len(b.panel.Categories)) - 0.5, ymin, ymax
}

func (b *bars) Plot(c draw.Canvas, p *plot.Plot) {
	x, y := p.Transforms(&c)
	n := len(b.panel.Series)
	w := groupWidth / float64(n)
	base := 0.0
	if b.panel.LogY {
		base = p.Y.Min
	}
	label := textStyle(sans, 9, color.Black)
	label.XAlign = draw.XCenter
	for j, s := range b.panel.Series {
		for i, v := range s.Values {
			if !finite(v) || b.panel.LogY && v <= 0 {
				continue
			}
			left := float64(i) - groupWidth/2 + float64(j)*w
			rect := vg.Rectangle{
				Min: vg.Point{X: x(left), Y: y(math.Min(base, v))},
				Max: vg.Point{X: x(left + w), Y: y(math.Max(base, v))},
			}
			c.SetColor(b.colors[j])
			c.Fill(rect.Path())
			if b.panel.ValueFormat != "" {
				c.FillText(label, vg.Point{X: x(left + w/2), Y: y(v) + vg.Points(2)}, fmt.Sprintf(b.panel.ValueFormat, v))
			}
		}
	}
}

type barThumb struct{ c color.Color }

func (t barThumb) Thumbnail(c *draw.Canvas) {
	r := c.Rectangle
	r.Min.Y += vg.Points(2)
	r.Max.Y -= vg.Points(2)
	c.SetColor(t.c)
	c.Fill(r.Path())
}

// plainTicks put about five major ticks on round steps (1, 2, 2.5 or 5 × 10ⁿ) that always
// include zero when the range spans it, labelled as people write numbers ("250", not
// "250.00"), optionally without their sign for mirrored panels.
type plainTicks struct{ abs bool }

func (t plainTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || math.IsInf(lo, 0) || math.IsInf(hi, 0) || math.IsNaN(lo) || math.IsNaN(hi) {
		return plot.DefaultTicks{}.Ticks(lo, hi)
	}
	raw := (hi - lo) / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * mag
	for _, m := range []float64{1, 2, 2.5, 5} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	// The slack lets the last step land on hi despite rounding; near the largest float
	// it would overflow to +Inf and the loop would never end.
	last := hi + step*1e-9
	if math.IsInf(last, 0) {
		last = hi
	}
	first := math.Ceil(lo / step)
	if first+1 == first {
		// A range a few ulps wide far from zero: k++ would not move k.
		return plot.DefaultTicks{}.Ticks(lo, hi)
	}
	var ticks []plot.Tick
	for k := first; k*step <= last; k++ {
		v := k * step
		if math.Abs(v) < step*1e-9 {
			v = 0
		}
		label := v
		if t.abs {
			label = math.Abs(v)
		}
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(label, 'g', 6, 64)})
		minor := v + step/2
		if minor <= hi {
			ticks = append(ticks, plot.Tick{Value: minor})
		}
	}
	if first := math.Ceil(lo/step)*step - step/2; first >= lo {
		ticks = append(ticks, plot.Tick{Value: first})
	}
	return ticks
}

// finite reports whether v can be drawn: experiments may hand over NaN (0/0) or ±Inf.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// logDecades widens a log axis to whole decades, at least one, so that gonum never has to
// widen an empty range itself (it would reach zero, which a log axis cannot show).
func logDecades(a *plot.Axis) {
	lo := math.Floor(math.Log10(a.Min))
	hi := math.Ceil(math.Log10(a.Max))
	if hi <= lo {
		hi = lo + 1
	}
	a.Min, a.Max = math.Pow(10, lo), math.Pow(10, hi)
}
