package chart

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func sample() Curves {
	return Curves{
		Title:  "Most admitted in any window of length T",
		Limit:  100,
		Window: time.Minute,
		Series: []Series{
			{Name: "fixed-window", Points: []Point{{30 * time.Second, 200}, {time.Minute, 200}, {2 * time.Minute, 300}}},
			{Name: "sliding-log", Points: []Point{{30 * time.Second, 100}, {time.Minute, 100}, {2 * time.Minute, 200}}},
		},
	}
}

func TestWriteSVGHasTitleAxesLegendAndLimit(t *testing.T) {
	var a, b bytes.Buffer
	if err := sample().Write(&a, "svg"); err != nil {
		t.Fatal(err)
	}
	if err := sample().Write(&b, "svg"); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("the same curves drew different bytes")
	}
	svg := a.String()
	for _, s := range []string{"Most admitted in any window of length T", "window length T (seconds)",
		"most admitted in one window of length T (requests)", "fixed-window", "sliding-log",
		"limit L = 100 per 1m0s", "T = W = 1m0s"} {
		if !strings.Contains(svg, s) {
			t.Errorf("svg lacks %q", s)
		}
	}
}

func TestWritePNGAndBadFormat(t *testing.T) {
	var buf bytes.Buffer
	if err := sample().Write(&buf, "png"); err != nil || !bytes.HasPrefix(buf.Bytes(), []byte("\x89PNG")) {
		t.Fatalf("png: %v, %d bytes", err, buf.Len())
	}
	buf.Reset()
	if err := sample().Write(&buf, "gif"); err == nil || buf.Len() != 0 {
		t.Fatalf("gif: err %v, %d bytes written", err, buf.Len())
	}
}

func TestWholeTicks(t *testing.T) {
	for _, tk := range (wholeTicks{}).Ticks(0, 500) {
		if strings.Contains(tk.Label, ".") {
			t.Errorf("tick label %q has decimals", tk.Label)
		}
	}
}
