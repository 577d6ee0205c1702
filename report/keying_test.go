package report

import (
	"testing"

	"github.com/rlsim/rlsim/report/chart"
)

func TestKeyingFigures(t *testing.T) {
	rate := func(v float64) *float64 { return &v }
	bars := func(f *chart.Figure) []chart.BarSeries { return f.Panels[0].(chart.BarPanel).Series }

	attacked := &Report{Scenario: "ip-rotation", Key: "ip", Results: []Result{
		{Algorithm: "gcra", LegitRejectRate: rate(0.01), AttackerAdmitRate: rate(0.97)},
		{Algorithm: "sliding-window", LegitRejectRate: rate(0.02), AttackerAdmitRate: rate(0.9)},
	}}
	figs := KeyingFigures(attacked)
	if len(figs) != 1 || figs[0].Name != "keying" {
		t.Fatalf("figures %d", len(figs))
	}
	s := bars(figs[0])
	if len(s) != 2 || s[0].Name != "legit refused" || s[1].Values[0] != 97 || s[0].Values[1] != 2 {
		t.Fatalf("series %+v", s)
	}

	layered := &Report{Scenario: "tenants", Results: []Result{{Algorithm: "gcra", LegitRejectRate: rate(0.3),
		RefusalsByLayer: []LayerCount{{Layer: "user"}, {Layer: "backend"}}}}}
	if figs := KeyingFigures(layered); len(figs) != 1 || len(bars(figs[0])) != 1 {
		t.Fatal("layers without attackers: one chart, legit only")
	}

	plain := &Report{Scenario: "steady", Results: []Result{{Algorithm: "gcra", LegitRejectRate: rate(0)}}}
	if figs := KeyingFigures(plain); figs != nil {
		t.Fatal("no attacker and no layers: no keying chart")
	}
	for _, f := range Figures(attacked) {
		if f.Name == "keying" {
			return
		}
	}
	t.Fatal("Figures leaves out the keying chart")
}
