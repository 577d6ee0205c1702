package cmd

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// findBrowser returns a headless-capable Chromium on PATH, or "" when there is none.
func findBrowser() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// The results page opens in a real browser with the verdict first — its matrix coloured
// red where the promise broke and green where it held — and shows its charts, which are
// files the page links: a screenshot of it holds the matrix's and the charts' colours.
// Its tables fit a 1280-pixel window without scrolling sideways. Skipped when no Chromium
// is installed (Debian: apt-get install chromium); scripts/screenshot-index.sh takes the
// same picture for a person to look at.
func TestIndexOpensInHeadlessChromium(t *testing.T) {
	browser := findBrowser()
	if browser == "" {
		t.Skip("no chromium on PATH")
	}
	if testing.Short() {
		t.Skip("starts a browser")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	if _, errOut, code := rlsim(t, "compare", "--scenario", "boundary-burst", "--scenario", "sliding-estimate",
		"--scenario", "cluster-outage", "--charts", "svg", "--out", out); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	chrome := func(args ...string) []byte {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, browser, append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
			"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
			"--user-data-dir=" + filepath.Join(dir, "profile"), "--hide-scrollbars", "--virtual-time-budget=10000"}, args...)...)
		var stdout bytes.Buffer
		cmd.Stdout = &stdout
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: %v", browser, err)
		}
		return stdout.Bytes()
	}
	const width, height = 1280, 3000
	shot := filepath.Join(dir, "index.png")
	chrome(fmt.Sprintf("--window-size=%d,%d", width, height), "--screenshot="+shot, "file://"+filepath.Join(out, "index.html"))
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != width || b.Dy() != height {
		t.Fatalf("screenshot is %v", b)
	}
	// The matrix's red (244,199,192) and green (213,235,213) come first, above the
	// scenarios; the charts draw in the palette's blue (0,114,178) and vermillion
	// (213,94,0), which the page itself does not use.
	var red, green, blue, vermillion, dark int
	firstRed := height
	for y := 0; y < height; y++ {
		for x := 0; x < width; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			r, g, b = r>>8, g>>8, b>>8
			switch {
			case near(r, 244) && near(g, 199) && near(b, 192):
				red++
				firstRed = min(firstRed, y)
			case near(r, 213) && near(g, 235) && near(b, 213):
				green++
			case near(r, 0) && near(g, 114) && near(b, 178):
				blue++
			case near(r, 213) && near(g, 94) && near(b, 0):
				vermillion++
			case r < 80 && g < 80 && b < 80:
				dark++
			}
		}
	}
	if red < 500 || green < 500 || firstRed > 600 {
		t.Errorf("the verdict's matrix is not first (red %d pixels from y=%d, green %d)", red, firstRed, green)
	}
	if blue < 2000 || vermillion < 200 {
		t.Errorf("chart colours barely present (blue %d, vermillion %d pixels): were the linked charts drawn?", blue, vermillion)
	}
	if dark < 5000 {
		t.Errorf("only %d dark pixels: where are the tables' text?", dark)
	}

	// The same page with a line of script added that measures it: nothing wider than the
	// window.
	page, err := os.ReadFile(filepath.Join(out, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	measure := `<script>document.title = "page " + document.documentElement.scrollWidth + " of " + window.innerWidth;</script></body>`
	probe := filepath.Join(out, "probe.html")
	if err := os.WriteFile(probe, bytes.Replace(page, []byte("</body>"), []byte(measure), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := string(chrome(fmt.Sprintf("--window-size=%d,%d", width, 900), "--dump-dom", "file://"+probe))
	want := fmt.Sprintf("<title>page %d of %d</title>", width, width)
	if !strings.Contains(dom, want) {
		i := strings.Index(dom, "<title>")
		t.Errorf("the page scrolls sideways at %d pixels: %s", width, dom[i:i+40])
	}
	if len(page) > 500_000 {
		t.Errorf("index.html is %d bytes", len(page))
	}
}

func near(v, want uint32) bool { return v+6 >= want && v <= want+6 }
