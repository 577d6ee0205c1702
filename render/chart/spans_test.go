package chart

import (
	"bytes"
	"strings"
	"testing"
)

func TestSpansAreDrawnAndNamed(t *testing.T) {
	pts := []Point{{X: 0, Y: 1}, {X: 10, Y: 3}}
	f := EffectiveLimitFigure(Meta{Title: "t", Caption: "c"}, "s", []Series{{Name: "fleet", Points: pts}}, 2)
	p := f.Panels[0].(LinePanel)
	p.Spans = []Span{{Name: "store down", From: 2, To: 4}, {Name: "scaled", From: 6, To: 6}, {Name: "backwards", From: 5, To: 1}}
	f.Panels[0] = p
	var b bytes.Buffer
	if err := f.Render(&b, "svg"); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	for _, want := range []string{"store down", "scaled", "advertised (2)"} {
		if !strings.Contains(svg, want) {
			t.Errorf("svg lacks %q", want)
		}
	}
	if strings.Contains(svg, "backwards") {
		t.Error("a span that ends before it starts is drawn")
	}
	// Spans are not data: a panel with nothing else has nothing to draw.
	p.Series = nil
	f.Panels[0] = p
	if err := f.Render(&b, "svg"); err == nil || !strings.Contains(err.Error(), "no data") {
		t.Errorf("err = %v", err)
	}
}
