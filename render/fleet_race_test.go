package render

import (
	"slices"
	"testing"

	"github.com/rlsim/rlsim/render/chart"
	"github.com/rlsim/rlsim/report"
)

func raceResult(alg, placement string, nodes int, rtt float64, effective int64) report.Result {
	return report.Result{Algorithm: alg, Distributed: &report.Distributed{
		Variant: placement, Placement: placement, Balancer: "round-robin", Nodes: nodes, StoreLatencyMS: rtt, EffectiveLimit: effective,
	}}
}

// The race figure: a panel per algorithm, effective limit against nodes, a line per round
// trip for the racy fleet, the atomic script as one line when it agrees at every round trip.
func TestRaceFigures(t *testing.T) {
	r := &report.Report{Scenario: "race", Policy: report.Policy{Limit: 100}, Results: []report.Result{
		raceResult("fixed-window", "shared-racy", 10, 50, 131),
		raceResult("fixed-window", "shared-racy", 1, 50, 107),
		raceResult("fixed-window", "shared-racy", 1, 1, 107),
		raceResult("fixed-window", "shared-racy", 10, 1, 108),
		raceResult("fixed-window", "shared", 1, 1, 107),
		raceResult("fixed-window", "shared", 10, 1, 107),
		raceResult("fixed-window", "shared", 1, 50, 107),
		raceResult("fixed-window", "shared", 10, 50, 107),
		raceResult("token-bucket", "shared-racy", 1, 5, 199),
		raceResult("token-bucket", "shared-racy", 10, 5, 1990),
		raceResult("token-bucket", "shared", 1, 5, 199),
		raceResult("token-bucket", "shared", 10, 10, 250), // disagrees: each round trip its own line
		raceResult("token-bucket", "local", 10, 10, 1000), // not part of the race
	}}
	figs := RaceFigures(r)
	if len(figs) != 1 || figs[0].Name != "race" || len(figs[0].Panels) != 2 {
		t.Fatalf("figures %+v", figs)
	}
	names := func(p chart.Panel) []string {
		var out []string
		for _, s := range p.(chart.LinePanel).Series {
			out = append(out, s.Name)
		}
		return out
	}
	fw := figs[0].Panels[0].(chart.LinePanel)
	if fw.Title != "fixed-window" || !slices.Equal(names(fw), []string{
		"read-decide-write, 1 ms round trip", "read-decide-write, 50 ms round trip", "atomic script, every round trip",
	}) {
		t.Errorf("fixed-window panel %q: %q", fw.Title, names(fw))
	}
	if pts := fw.Series[1].Points; len(pts) != 2 || pts[0] != (chart.Point{X: 1, Y: 107}) || pts[1] != (chart.Point{X: 10, Y: 131}) {
		t.Errorf("50 ms line %v, want nodes in order", pts)
	}
	if got := names(figs[0].Panels[1]); !slices.Equal(got, []string{
		"read-decide-write, 5 ms round trip", "atomic script, 5 ms round trip", "atomic script, 10 ms round trip",
	}) {
		t.Errorf("token-bucket panel: %q", got)
	}
	if fw.XLabel != "nodes" || len(fw.Limits) != 1 || fw.Limits[0].Y != 100 {
		t.Errorf("axes %q, limits %v", fw.XLabel, fw.Limits)
	}
	if !slices.ContainsFunc(Figures(r), func(f *chart.Figure) bool { return f.Name == "race" }) {
		t.Error("a scenario's figures leave the race out")
	}
	r.Results = r.Results[4:8] // atomic only
	if figs := RaceFigures(r); figs != nil {
		t.Errorf("a report without a racy fleet drew %d race figures", len(figs))
	}
}

// The fleet table shows the latency percentiles, timeouts, breaker and stale-read columns
// only where they mean something.
func TestDistributedTableTimingColumns(t *testing.T) {
	r := &report.Report{Scenario: "t", Results: []report.Result{
		{Algorithm: "gcra", Distributed: &report.Distributed{Variant: "plain", Placement: "shared"}},
	}}
	for _, c := range []report.Columns{{}, {Wide: true}} {
		shown := report.DropEmptyColumns(DistributedTable(r, c)).Names
		for _, col := range []string{"added_latency_ms_p99", "store_timeouts", "breaker_open_decisions", "stale_reads"} {
			if slices.Contains(shown, col) {
				t.Errorf("a fleet without latency, outage or race shows %s (%+v)", col, c)
			}
		}
	}
	r.Results = append(r.Results, report.Result{Algorithm: "gcra", Distributed: &report.Distributed{Variant: "down", Placement: "shared-racy", Alerts: 1,
		AddedLatencyMaxMS: 50, AddedLatencyP50MS: 1, AddedLatencyP99MS: 50, StoreTimeouts: 12, BreakerOpenDecisions: 345, StaleReads: 6}})
	tab := DistributedTable(r, report.Columns{Wide: true})
	row := tab.Rows[1]
	for col, want := range map[string]string{"added_latency_ms_p50": "1.00", "added_latency_ms_p99": "50.00", "store_timeouts": "12", "breaker_open_decisions": "345", "stale_reads": "6"} {
		if got := row[slices.Index(tab.Names, col)]; got != want {
			t.Errorf("%s = %q, want %q", col, got, want)
		}
	}
	// By default the outage and race figures come before the latency percentiles.
	def := DistributedTable(r, report.Columns{})
	for _, col := range []string{"over_admission", "effective_limit", "outage_admitted", "stale_reads"} {
		if !slices.Contains(def.Names, col) {
			t.Errorf("the default fleet table lacks %s: %v", col, def.Names)
		}
	}
}

// The fleet table shows how often legit clients were refused: behind a lease-based fleet
// it is the figure a reader asks first.
func TestDistributedTableShowsLegitRejectRate(t *testing.T) {
	rate := 0.1234
	r := &report.Report{Scenario: "fleet", Results: []report.Result{
		{Algorithm: "lease", Requests: 100, Rejected: 20, LegitRejectRate: &rate, Distributed: &report.Distributed{Variant: "lease-10", Nodes: 4, NodesMax: 4}},
		{Algorithm: "lease", Requests: 100, Distributed: &report.Distributed{Variant: "lease-1", Nodes: 4, NodesMax: 4}},
	}}
	tb := DistributedTable(r, report.Columns{})
	col := slices.Index(tb.Names, "legit_reject_rate")
	if col < 0 || tb.Rows[0][col] != "12.34%" || tb.Rows[1][col] != "-" || tb.Header[col] != "legit\nrefused" {
		t.Fatalf("header %v, rows %v", tb.Header, tb.Rows)
	}
}
