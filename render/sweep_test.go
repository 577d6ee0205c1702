package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rlsim/rlsim/render/chart"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/scenario"
	"github.com/rlsim/rlsim/sweep"
)

// testSweep is a grid of 8 points over steady-poisson: two bursts, two windows and two
// durations.
func testSweep(t *testing.T) (*scenario.Scenario, []sweep.Param) {
	t.Helper()
	sc, err := scenario.Load("steady-poisson")
	if err != nil {
		t.Fatal(err)
	}
	var params []sweep.Param
	for _, s := range []string{"policy.burst=5,60", "policy.window=30s,1m", "duration=5s,10s"} {
		p, err := sweep.ParseParam(s)
		if err != nil {
			t.Fatal(err)
		}
		params = append(params, p)
	}
	return sc, params
}

func TestSweepFigure(t *testing.T) {
	sc, params := testSweep(t)
	res, err := sweep.Run(sc, params, sweep.Options{Algorithms: []string{"token-bucket", "sliding-window"}})
	if err != nil {
		t.Fatal(err)
	}
	fig, err := SweepFigure(res, "false_reject_rate", "policy.burst")
	if err != nil {
		t.Fatal(err)
	}
	if fig.Name != "sweep-steady-poisson-false_reject_rate-vs-policy-burst" {
		t.Errorf("name %q", fig.Name)
	}
	// One panel per (window, duration), a line per algorithm through both bursts.
	if len(fig.Panels) != 4 {
		t.Fatalf("%d panels, want 4 (2 windows × 2 durations)", len(fig.Panels))
	}
	first := fig.Panels[0].(chart.LinePanel)
	if first.Title != "policy.window=30s · duration=5s" || first.XLabel != "policy.burst (units)" || first.YLabel != "false_reject_rate (%)" || !first.Markers {
		t.Errorf("first panel: %q, x %q, y %q, markers %v", first.Title, first.XLabel, first.YLabel, first.Markers)
	}
	if len(first.Series) != 2 || first.Series[0].Name != "token-bucket" || first.Series[1].Name != "sliding-window" {
		t.Fatalf("first panel's series: %+v", first.Series)
	}
	// Row 0 is burst 5 at (30s, 5s); the rate is drawn in percent.
	want := res.Rows[0].Results[0].FalseRejectRate * 100
	if pts := first.Series[0].Points; len(pts) != 2 || pts[0] != (chart.Point{X: 5, Y: want}) || pts[1].X != 60 {
		t.Errorf("token-bucket points %v, want x 5 then 60, y %g first", pts, want)
	}
	for _, s := range []string{"rlsim sweep --scenario steady-poisson --param policy.burst=5,60 --param policy.window=30s,1m --param duration=5s,10s",
		"--algorithms token-bucket,sliding-window", "--chart-metric false_reject_rate --chart-param policy.burst", "seed 1 (the scenario's)"} {
		if !strings.Contains(fig.Meta.Caption, s) {
			t.Errorf("caption %q lacks %q", fig.Meta.Caption, s)
		}
	}
	for format, magic := range map[string]string{"png": "\x89PNG", "svg": "<?xml"} {
		var a, b bytes.Buffer
		if err := fig.Render(&a, format); err != nil {
			t.Fatal(err)
		}
		if err := fig.Render(&b, format); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(a.String(), magic) || !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Errorf("%s chart starts %q, %d bytes, same bytes twice: %v", format, a.String()[:min(8, a.Len())], a.Len(), bytes.Equal(a.Bytes(), b.Bytes()))
		}
	}
	if _, err := SweepFigure(res, "colour", "policy.burst"); err == nil {
		t.Error("unknown metric accepted")
	}
	if _, err := SweepFigure(res, "over_admission", "seed"); err == nil {
		t.Error("unswept parameter accepted")
	}
}

// Past sweepMaxPanels combinations of the other parameters, the chart draws one panel with a
// line per algorithm and combination rather than a wall of small panels.
func TestSweepFigureWithManyCombinationsIsOnePanel(t *testing.T) {
	params := []sweep.Param{{Name: "policy.window", Values: []string{"1s", "10s", "100s"}}, {Name: "seed", Values: []string{"1", "2", "3", "4", "5"}}, {Name: "policy.burst", Values: []string{"1", "2"}}}
	res := &sweep.Results{Sweep: sweep.Spec{Scenario: "s", Params: params, Points: sweep.Size(params)}}
	for i := range sweep.Size(params) {
		res.Rows = append(res.Rows, sweep.Row{Point: i, Values: sweep.PointValues(params, i), Results: []report.Result{{Algorithm: "gcra", OverAdmission: float64(i)}}})
	}
	fig, err := SweepFigure(res, "over_admission", "policy.window")
	if err != nil {
		t.Fatal(err)
	}
	if len(fig.Panels) != 1 {
		t.Fatalf("%d panels, want 1", len(fig.Panels))
	}
	p := fig.Panels[0].(chart.LinePanel)
	if len(p.Series) != 10 || p.Series[0].Name != "gcra · seed=1 · policy.burst=1" || !p.LogX {
		t.Fatalf("%d series, first %q, log x %v", len(p.Series), p.Series[0].Name, p.LogX)
	}
	if pts := p.Series[0].Points; len(pts) != 3 || pts[0].X != 1 || pts[2] != (chart.Point{X: 100, Y: 20}) {
		t.Errorf("points %v", pts)
	}
	if !strings.Contains(fig.Meta.Caption, "seed swept") {
		t.Errorf("caption %q", fig.Meta.Caption)
	}
}
