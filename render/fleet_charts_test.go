package render

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/rlsim/rlsim/render/chart"
	"github.com/rlsim/rlsim/report"
	"gonum.org/v1/plot/vg"
)

// fleetResult is one algorithm's result on a fleet variant, with a timeline whose busiest
// key's window counts are windows, one a second.
func fleetResult(alg string, d report.Distributed, windows ...int64) report.Result {
	dd := d
	return report.Result{Algorithm: alg, Distributed: &dd, Timeline: &report.Timeline{Bin: time.Second, WindowAdmitted: windows}}
}

func fleetReport(results ...report.Result) *report.Report {
	return &report.Report{Scenario: "fleet", Seed: 3, Key: "user", Policy: report.Policy{Limit: 100, Window: report.Duration(time.Minute), Burst: 100}, Results: results}
}

// A panel per variant, in the order first seen, a line per algorithm; the panel's title
// names the nodes (and their growth, and a balancer other than round-robin) and the
// effective limit; outages, node changes and labelled events become spans; series that
// coincide are named in the caption; only the bottom row has the time axis' label.
func TestFleetFiguresPanelPerVariant(t *testing.T) {
	local := report.Distributed{Variant: "local", Nodes: 3, NodesMax: 3, Balancer: "round-robin", EffectiveLimit: 300,
		Events: []report.FleetEvent{{At: 10 * time.Second, For: 5 * time.Second, Policy: "fail-open"}, {At: 20 * time.Second, Nodes: 5}}}
	shared := report.Distributed{Variant: "shared", Nodes: 2, NodesMax: 4, Balancer: "sticky", EffectiveLimit: 120,
		Events: []report.FleetEvent{{At: 30 * time.Second, For: 2 * time.Second, Label: "partition"}}}
	owner := report.Distributed{Variant: "owner", Nodes: 4, NodesMax: 4, Balancer: "round-robin", EffectiveLimit: 100}
	r := fleetReport(
		fleetResult("fixed-window", local, 50, 300, 200),
		fleetResult("gcra", local, 50, 300, 200),
		fleetResult("fixed-window", shared, 100, 120),
		fleetResult("gcra", shared, 90, 110),
		fleetResult("gcra", owner, 100),
		report.Result{Algorithm: "sliding-log"}, // not a fleet result: left out
	)
	figs := FleetFigures(r)
	if len(figs) != 1 {
		t.Fatalf("%d figures, want the effective limit's alone (one skew)", len(figs))
	}
	f := figs[0]
	if f.Name != "effective-limit" || f.Columns != 2 || len(f.Panels) != 3 || f.Width != 13*vg.Inch {
		t.Fatalf("figure %q: %d columns, %d panels, width %v", f.Name, f.Columns, len(f.Panels), f.Width)
	}
	titles := []string{
		"local · 3 nodes · effective 300 = 3.00×",
		"shared · 2→4 nodes, sticky · effective 120 = 1.20×",
		"owner · 4 nodes · effective 100 = 1.00×",
	}
	for i, p := range f.Panels {
		lp := p.(chart.LinePanel)
		if lp.Title != titles[i] || !lp.Steps || lp.YLabel != "admitted in trailing 1m0s" {
			t.Errorf("panel %d: %q steps %v y %q", i, lp.Title, lp.Steps, lp.YLabel)
		}
		if wantX := i >= 1; (lp.XLabel != "") != wantX {
			t.Errorf("panel %d: x label %q", i, lp.XLabel)
		}
		if len(lp.Limits) != 1 || lp.Limits[0].Y != 100 {
			t.Errorf("panel %d: limits %+v, want the advertised 100", i, lp.Limits)
		}
	}
	local0 := f.Panels[0].(chart.LinePanel)
	if len(local0.Series) != 2 || local0.Series[0].Name != "fixed-window" || len(local0.Series[0].Points) != 4 ||
		local0.Series[0].Points[3] != (chart.Point{X: 3, Y: 200}) {
		t.Errorf("local series %+v, want two, each closed at the end of its last bin", local0.Series)
	}
	wantSpans := [][]chart.Span{
		{{Name: "store down", From: 10, To: 15}, {Name: "scaled to 5 nodes", From: 20, To: 20}},
		{{Name: "partition", From: 30, To: 32}},
		nil,
	}
	for i, p := range f.Panels {
		if got := p.(chart.LinePanel).Spans; !equalSpans(got, wantSpans[i]) {
			t.Errorf("panel %d spans %+v, want %+v", i, got, wantSpans[i])
		}
	}
	if !strings.HasPrefix(f.Meta.Caption, report.Caption(r)) || !strings.Contains(f.Meta.Caption, "identical here (drawn one on another) — local: fixed-window = gcra") ||
		strings.Contains(f.Meta.Caption, "shared:") {
		t.Errorf("caption %q", f.Meta.Caption)
	}
	if FleetFigures(fleetReport(report.Result{Algorithm: "gcra"})) != nil {
		t.Error("a report without fleet results has fleet figures")
	}
}

func equalSpans(a, b []chart.Span) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Of many variants whose series coincide, the caption names the first two and counts
// the rest; one variant takes the whole width.
func TestFleetFiguresCountIdenticalVariants(t *testing.T) {
	var results []report.Result
	for _, v := range []string{"a", "b", "c", "d"} {
		d := report.Distributed{Variant: v, Nodes: 2, NodesMax: 2, Balancer: "round-robin", EffectiveLimit: 100}
		results = append(results, fleetResult("fixed-window", d, 1, 2), fleetResult("gcra", d, 1, 2))
	}
	f := FleetFigures(fleetReport(results...))[0]
	if !strings.Contains(f.Meta.Caption, "a: fixed-window = gcra; b: fixed-window = gcra; and in 2 more variants") {
		t.Errorf("caption %q", f.Meta.Caption)
	}
	one := FleetFigures(fleetReport(results[:2]...))[0]
	if one.Columns != 1 || one.Width != 0 || len(one.Panels) != 1 {
		t.Errorf("one variant: %d columns, width %v, %d panels", one.Columns, one.Width, len(one.Panels))
	}
}

// Variants that sweep the nodes' clock skew add a figure: a panel per algorithm, a line
// per clock, points in skew order, and for the bucket-type algorithms the node-clock bound.
func TestFleetFiguresSkew(t *testing.T) {
	var results []report.Result
	for _, skew := range []time.Duration{2 * time.Second, 0, time.Second} {
		for _, clock := range []string{"node", "store"} {
			for _, alg := range []string{"fixed-window", "token-bucket"} {
				d := report.Distributed{Variant: clock + "-" + skew.String(), Nodes: 2, NodesMax: 2, Balancer: "round-robin",
					Clock: clock, Skew: report.Duration(skew), EffectiveLimit: 100 + int64(skew/time.Second)*10}
				results = append(results, fleetResult(alg, d, 100))
			}
		}
	}
	figs := FleetFigures(fleetReport(results...))
	if len(figs) != 2 || figs[1].Name != "effective-limit-skew" {
		t.Fatalf("%d figures, want the effective limit's and the skew's", len(figs))
	}
	s := figs[1]
	if len(s.Panels) != 2 || s.Columns != 2 || !s.SharedY {
		t.Fatalf("skew figure: %d panels, %d columns", len(s.Panels), s.Columns)
	}
	fixed, bucket := s.Panels[0].(chart.LinePanel), s.Panels[1].(chart.LinePanel)
	if fixed.Title != "fixed-window" || len(fixed.Series) != 2 || bucket.Title != "token-bucket" || len(bucket.Series) != 3 {
		t.Fatalf("panels %q (%d series) and %q (%d series)", fixed.Title, len(fixed.Series), bucket.Title, len(bucket.Series))
	}
	node := fixed.Series[0]
	if node.Name != "node clock" || len(node.Points) != 3 || node.Points[0] != (chart.Point{X: 0, Y: 100}) || node.Points[2] != (chart.Point{X: 2, Y: 120}) {
		t.Errorf("node clock series %+v, want three points in skew order", node)
	}
	bound := bucket.Series[2]
	// b + L·(W + 2·skew)/W, W = 60 s: 100 + 100·(60 + 2·2)/60 at a skew of 2 s.
	if bound.Name != "bound b + L·(W + 2·skew)/W" || len(bound.Points) != 3 || bound.Points[2].X != 2 || math.Abs(bound.Points[2].Y-(100+100*64.0/60)) > 1e-9 {
		t.Errorf("bound %+v", bound)
	}
	for i, p := range s.Panels {
		if lp := p.(chart.LinePanel); lp.XLabel != "node clock skew ± (s)" || lp.Limits[0].Y != 100 {
			t.Errorf("panel %d: x %q limits %+v", i, lp.XLabel, lp.Limits)
		}
	}
}
