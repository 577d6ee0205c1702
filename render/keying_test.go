package render

import (
	"strings"
	"testing"

	"github.com/rlsim/rlsim/render/chart"
	"github.com/rlsim/rlsim/report"
)

func TestKeyingFigures(t *testing.T) {
	rate := func(v float64) *float64 { return &v }
	bars := func(f *chart.Figure) []chart.BarSeries { return f.Panels[0].(chart.BarPanel).Series }

	attacked := &report.Report{Scenario: "ip-rotation", Key: "ip", Results: []report.Result{
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

	layered := &report.Report{Scenario: "tenants", Results: []report.Result{{Algorithm: "gcra", LegitRejectRate: rate(0.3),
		RefusalsByLayer: []report.LayerCount{{Layer: "user"}, {Layer: "backend"}}}}}
	if figs := KeyingFigures(layered); len(figs) != 1 || len(bars(figs[0])) != 1 {
		t.Fatal("layers without attackers: one chart, legit only")
	}

	plain := &report.Report{Scenario: "steady", Results: []report.Result{{Algorithm: "gcra", LegitRejectRate: rate(0)}}}
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

func TestKeyingFigureComparesKeys(t *testing.T) {
	rate := func(v float64) *float64 { return &v }
	r := &report.Report{Scenario: "xff-spoofing", Key: "xff:2", Results: []report.Result{
		{Algorithm: "gcra", LegitRejectRate: rate(0), AttackerAdmitRate: rate(0.05)},
		{Algorithm: "fixed-window", LegitRejectRate: rate(0), AttackerAdmitRate: rate(0.03)},
	}, KeyRuns: []report.KeyRun{
		{Key: "xff-leftmost", Results: []report.Result{{Algorithm: "gcra", LegitRejectRate: rate(0), AttackerAdmitRate: rate(1)}, {Algorithm: "fixed-window", LegitRejectRate: rate(0), AttackerAdmitRate: rate(1)}}},
		{Key: "ip", Results: []report.Result{{Algorithm: "gcra", LegitRejectRate: rate(0.99), AttackerAdmitRate: rate(0.01)}, {Algorithm: "fixed-window", LegitRejectRate: rate(0.98), AttackerAdmitRate: rate(0.02)}}},
	}}
	figs := KeyingFigures(r)
	if len(figs) != 1 || len(figs[0].Panels) != 2 {
		t.Fatalf("want one figure with a panel per algorithm")
	}
	p := figs[0].Panels[0].(chart.BarPanel)
	if p.Title != "gcra" || strings.Join(p.Categories, ",") != "xff:2,xff-leftmost,ip" ||
		p.Series[0].Values[2] != 99 || p.Series[1].Values[1] != 100 || p.Series[1].Values[0] != 5 {
		t.Fatalf("panel %+v", p)
	}
	if !strings.Contains(figs[0].Meta.Caption, "--key xff-leftmost") || figs[0].Panels[1].(chart.BarPanel).YLabel != "" {
		t.Fatalf("caption %q; only the left column labels Y", figs[0].Meta.Caption)
	}

	crowd := &report.Report{Scenario: "nat-crowd", Key: "user", Results: []report.Result{{Algorithm: "gcra", LegitRejectRate: rate(0)}},
		KeyRuns: []report.KeyRun{{Key: "ip", Results: []report.Result{{Algorithm: "gcra", LegitRejectRate: rate(0.99)}}}}}
	f := KeyingFigures(crowd)[0]
	if len(f.Panels[0].(chart.BarPanel).Series) != 1 || strings.Contains(f.Meta.Title, "attacker") {
		t.Fatalf("no attackers: legit only, title %q", f.Meta.Title)
	}
	if got := report.OwnKeyLabel("account=account+ip=ip"); got != "account+ip" {
		t.Fatalf("own key label %q", got)
	}
}
