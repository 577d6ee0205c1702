package chart

import (
	"bytes"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg/vgsvg"
)

// fallbackFace is what a viewer without Liberation Sans draws the charts in: DejaVu Sans,
// Debian's default sans face, about 11% wider in bold.
const fallbackFace = "font-family:'DejaVu Sans';"

// titleInk is the leftmost and rightmost columns of dark pixels in the top rows of a PNG
// (the title's band, down to rows), in pixels.
func titleInk(t *testing.T, data []byte, rows int) (left, right, width int) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	left, right = b.Max.X, -1
	for y := b.Min.Y; y < b.Min.Y+rows; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, a := img.At(x, y).RGBA()
			if a > 0x8000 && r+g+bl < 3*0x6000 {
				left, right = min(left, x), max(right, x)
			}
		}
	}
	return left, right, b.Dx()
}

// rsvg renders svg with librsvg's rsvg-convert at 96 dpi, in the fallback face.
func rsvg(t *testing.T, svg string) []byte {
	t.Helper()
	dir := t.TempDir()
	in := filepath.Join(dir, "f.svg")
	svg = strings.ReplaceAll(svg, "font-family:'Liberation Sans',Arial,Helvetica,sans-serif;", fallbackFace)
	if err := os.WriteFile(in, []byte(svg), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("rsvg-convert", "-f", "png", in).Output()
	if err != nil {
		t.Fatalf("rsvg-convert: %v", err)
	}
	return out
}

// A renderer other than the browser (librsvg, as ImageMagick's delegate uses), in a face
// wider than the one the layout measured, keeps every title inside the page's margins:
// the title is anchored at its centre and takes at most titleShare of the width. The
// same SVG left-anchored, as gonum writes it, runs past the right margin.
func TestTitlesStayInsideTheFrameInAnotherRenderer(t *testing.T) {
	if _, err := exec.LookPath("rsvg-convert"); err != nil {
		t.Skip("rsvg-convert not installed (Debian: librsvg2-bin)")
	}
	px := 96.0 / 72 // pixels per point
	margin := int(8*px + 0.5)
	for _, title := range []string{
		"cluster-skew: effective limit against node clock skew, by the nodes' clocks and the store's, and more",
		"cluster-racy: requests admitted and refused over time, per algorithm, for every variant of the fleet in turn",
		"short title",
	} {
		f := TimelineFigure(Meta{Title: title, Caption: "c"}, manyRuns(2), 1)
		var b strings.Builder
		if err := f.Render(&b, "svg"); err != nil {
			t.Fatal(err)
		}
		left, right, width := titleInk(t, rsvg(t, b.String()), int(30*px+0.5))
		if left < margin || right > width-margin {
			t.Errorf("%q: title ink from %d to %d px of %d: outside the %d px margins", title, left, right, width, margin)
		}
	}
	// As gonum writes it: anchored at its left end by Liberation Sans's widths.
	f := TimelineFigure(Meta{Title: "cluster-skew: effective limit against node clock skew, by the nodes' clocks and the store's", Caption: "c"}, manyRuns(2), 1)
	width, height := f.size()
	c := vgsvg.New(width, height)
	if _, err := f.draw(drawOn(c)); err != nil {
		t.Fatal(err)
	}
	var raw bytes.Buffer
	if _, err := c.WriteTo(&raw); err != nil {
		t.Fatal(err)
	}
	svg := strings.ReplaceAll(raw.String(), "font-family:Liberation Sans;", "font-family:'Liberation Sans',Arial,Helvetica,sans-serif;")
	left, right, w := titleInk(t, rsvg(t, svg), int(30*px+0.5))
	if right <= w-margin {
		t.Errorf("left-anchored, the title's ink ends at %d px of %d, inside the margin: the check above would not see a title through the frame (%d-%d)", right, w, left, right)
	}
}
