package cmd

import (
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
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

// The results page opens in a real browser and shows its charts: a screenshot of it holds
// the charts' colours. Skipped when no Chromium is installed (Debian: apt-get install
// chromium); scripts/screenshot-index.sh takes the same picture for a person to look at.
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
	if _, errOut, code := rlsim(t, "compare", "--scenario", "boundary-burst", "--scenario", "sliding-estimate", "--charts", "svg", "--out", out); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	shot := filepath.Join(dir, "index.png")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--hide-scrollbars", "--window-size=1280,2400",
		"--screenshot="+shot, "file://"+filepath.Join(out, "index.html"))
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", browser, err, msg)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 1280 || b.Dy() != 2400 {
		t.Fatalf("screenshot is %v", b)
	}
	// The charts draw in the palette's blue (0,114,178) and vermillion (213,94,0); the
	// page itself uses neither, so finding them means the embedded SVGs were rendered.
	var blue, vermillion, dark int
	for y := 0; y < 2400; y++ {
		for x := 0; x < 1280; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			r, g, b = r>>8, g>>8, b>>8
			switch {
			case near(r, 0) && near(g, 114) && near(b, 178):
				blue++
			case near(r, 213) && near(g, 94) && near(b, 0):
				vermillion++
			case r < 80 && g < 80 && b < 80:
				dark++
			}
		}
	}
	if blue < 2000 || vermillion < 200 {
		t.Errorf("chart colours barely present (blue %d, vermillion %d pixels): were the SVGs drawn?", blue, vermillion)
	}
	if dark < 5000 {
		t.Errorf("only %d dark pixels: where are the tables' text?", dark)
	}
}

func near(v, want uint32) bool { return v+6 >= want && v <= want+6 }
