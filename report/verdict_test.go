package report

import (
	"strings"
	"testing"
	"time"
)

func verdictReports() []*Report {
	legit, attacker := 0.02, 0.4
	policy := Policy{Limit: 100, Window: Duration(time.Minute), Burst: 100}
	return []*Report{
		{Scenario: "edge", Policy: policy, Results: []Result{
			{Algorithm: "gcra", PeakWindowAdmitted: 100, OverAdmission: 1, FalseRejectRate: 0.25},
			{Algorithm: "fixed-window", PeakWindowAdmitted: 101, OverAdmission: 1.01},
			{Algorithm: "sliding-log", PeakWindowAdmitted: 100, OverAdmission: 1},
		}},
		{Scenario: "login", Policy: policy, Results: []Result{
			{Algorithm: "gcra", OverAdmission: 1.95, LegitRejectRate: &legit, AttackerAdmitRate: &attacker},
		}},
		{Scenario: "fleet", Policy: policy, Results: []Result{
			{Algorithm: "lease", OverAdmission: 0.6, Distributed: &Distributed{Variant: "lease-50"}, LegitRejectRate: &legit},
			{Algorithm: "lease", OverAdmission: 1.09, Distributed: &Distributed{Variant: "lease-1"}, LegitRejectRate: &legit},
		}},
		{Scenario: "storm", Retries: []RetryResult{
			{Algorithm: "gcra", Strategy: "exponential", Amplification: 6.4, WaveHeights: []int64{500, 400}},
			{Algorithm: "gcra", Strategy: "full-jitter", Amplification: 4.1},
		}},
	}
}

// One request over the limit breaks the promise; exactly the limit keeps it.
func TestBrokeIsOneRequestOverTheLimit(t *testing.T) {
	for _, c := range []struct {
		peak  int64
		limit int64
		broke bool
	}{{100, 100, false}, {101, 100, true}, {6000, 6000, false}, {6001, 6000, false}, {6031, 6000, true}, {3, 2, true}} {
		if got := Broke(float64(c.peak) / float64(c.limit)); got != c.broke {
			t.Errorf("%d of %d: broke %v, want %v", c.peak, c.limit, got, c.broke)
		}
	}
}

func TestVerdictGroupsScenariosByWhatTheyCost(t *testing.T) {
	v := NewVerdict(verdictReports())
	if len(v.Blocks) != 2 || len(v.RetryOnly) != 1 || v.RetryOnly[0] != "storm" || len(v.Findings) != 4 {
		t.Fatalf("verdict %+v", v)
	}
	plain := v.Blocks[0]
	if strings.Join(plain.Algorithms, ",") != "fixed-window,sliding-log,gcra" {
		t.Errorf("columns %v: want rlsim's order", plain.Algorithms)
	}
	if len(plain.Groups) != 2 || plain.Groups[0].Cost != CostFalseRejects || plain.Groups[1].Cost != CostAttackerAdmitted {
		t.Fatalf("groups %+v", plain.Groups)
	}
	edge := plain.Groups[0].Rows[0].Cells
	if !edge[0].Broke || edge[0].Ratio() != "1.01" || edge[1].Broke || edge[2].Broke || edge[2].Cost != "25%" {
		t.Errorf("edge cells %+v", edge)
	}
	login := plain.Groups[1].Rows[0].Cells
	if login[0].Ran || login[0].Ratio() != "-" || !login[2].Broke || login[2].Cost != "40%" {
		t.Errorf("login cells %+v", login)
	}
	// A fleet's cell is its worst variant.
	fleet := v.Blocks[1]
	if fleet.Algorithms[0] != "lease" || !fleet.Groups[0].Fleet || fleet.Groups[0].Cost != CostLegitRefused {
		t.Fatalf("fleet block %+v", fleet)
	}
	// lease is a fleet's protocol, no algorithm of the catalogue: it states no bound.
	if c := fleet.Groups[0].Rows[0].Cells[0]; c.Ratio() != "1.09" || !c.Broke || !c.Beyond || c.Cost != "2.0%" {
		t.Errorf("fleet cell %+v", c)
	}
	want := []string{
		"fixed-window 1.01× broke the promise; gcra and sliding-log kept it, false rejects from 0% (sliding-log) to 25.00% (gcra).",
		"gcra 1.95× broke the promise, attacker requests admitted 40.00%.",
		"lease-1 1.09× broke the promise; lease-50 kept it, legit requests refused 2.00%.",
		"clients retrying: fewest calls per request full-jitter on gcra (4.10); synchronized retry waves with exponential.",
	}
	for i, f := range v.Findings {
		if f.Text != want[i] {
			t.Errorf("finding %s = %q\nwant %q", f.Scenario, f.Text, want[i])
		}
	}
}

func TestVerdictTextKeepsToItsWidth(t *testing.T) {
	for _, width := range []int{100, 60} {
		var b strings.Builder
		writeVerdictText(&b, NewVerdict(verdictReports()), width)
		text := b.String()
		for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
			if DisplayWidth(line) > width {
				t.Errorf("width %d: line of %d: %q", width, DisplayWidth(line), line)
			}
		}
		if !strings.Contains(text, "edge    ~1.01  0%") && !strings.Contains(text, "edge      ~1.01") {
			t.Errorf("width %d: no marked cell for the edge scenario:\n%s", width, text)
		}
	}
	// Too narrow for all three algorithms side by side: the matrix is split, each part
	// naming every scenario again.
	var b strings.Builder
	writeVerdictText(&b, NewVerdict(verdictReports()[:1]), 32)
	if n := strings.Count(b.String(), "\nedge "); n != 2 {
		t.Errorf("narrow matrix names the scenario %d times, want 2 parts:\n%s", n, b.String())
	}
}

// A layered run's over-admission is its busiest layer's, and so is the bound it is held
// to: gcra at 39 of the ip layer's 20 per minute is within gcra's 2L−1, though 1.95 times
// the account layer's 5 would be beyond it; a run of one limit is held to its policy.
func TestVerdictHoldsALayeredRunToItsBusiestLayersBound(t *testing.T) {
	account := Policy{Limit: 5, Window: Duration(5 * time.Minute)}
	for _, c := range []struct {
		layers []LayerCount
		peak   int64
		beyond bool
	}{
		{[]LayerCount{{Layer: "account"}, {Layer: "ip"}}, 39, false}, // 39 of the ip layer's 20
		{[]LayerCount{{Layer: "account"}, {Layer: "ip"}}, 42, true},  // 42 of 21: beyond 2·21−1
		{nil, 10, true}, // 10 of the policy's 5: beyond 2·5−1
	} {
		over := 1.95
		if c.peak == 42 {
			over = 42.0 / 21
		}
		if c.layers == nil {
			over = 2
		}
		r := &Report{Scenario: "login", Policy: account, Results: []Result{
			{Algorithm: "gcra", PeakWindowAdmitted: c.peak, OverAdmission: over, RefusalsByLayer: c.layers},
		}}
		if got := NewVerdict([]*Report{r}).Blocks[0].Groups[0].Rows[0].Cells[0]; !got.Broke || got.Beyond != c.beyond {
			t.Errorf("peak %d, over %.3f, layers %v: %+v, want beyond %v", c.peak, over, c.layers != nil, got, c.beyond)
		}
	}
}

func TestCompactPercent(t *testing.T) {
	for v, want := range map[float64]string{0: "0%", 0.0001: "<0.1%", 0.0006: "0.1%", 0.025: "2.5%", 0.0994: "9.9%", 0.0996: "10%", 0.5: "50%", 1: "100%"} {
		if got := compactPercent(v); got != want {
			t.Errorf("compactPercent(%g) = %q, want %q", v, got, want)
		}
	}
}

func TestWrapKeepsWordsAndWidth(t *testing.T) {
	got := Wrap("the busiest key's window × the limit — ✗ broke", 12, "  ")
	want := []string{"the busiest", "  key's", "  window ×", "  the limit", "  — ✗ broke"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("Wrap = %q, want %q", got, want)
	}
	if got := Wrap("a-very-long-file-name.svg fits", 10, ""); got[0] != "a-very-long-file-name.svg" {
		t.Errorf("a long word is cut: %q", got)
	}
}

// A fleet whose scenario does not say who is legit speaks of its false rejects, not of
// legit requests it could not have refused.
func TestFleetFindingWithoutLegitUsersNamesFalseRejects(t *testing.T) {
	policy := Policy{Limit: 100, Window: Duration(time.Minute), Burst: 100}
	r := &Report{Scenario: "fleet", Policy: policy, Results: []Result{
		{Algorithm: "gcra", OverAdmission: 1, Distributed: &Distributed{Variant: "shared"}},
		{Algorithm: "gcra", OverAdmission: 1.5, Distributed: &Distributed{Variant: "local"}, FalseRejectRate: 0.1},
	}}
	want := "local 1.50× broke the promise; shared kept it, with no false reject."
	if got := verdictFinding(r); got != want {
		t.Errorf("finding %q\nwant %q", got, want)
	}
}
