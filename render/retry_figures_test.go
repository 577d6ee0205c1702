package render

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/rlsim/rlsim/report"
)

func stormReport() *report.Report {
	bin := report.Duration(10 * time.Millisecond)
	return &report.Report{Scenario: "storm", Seed: 2, Policy: report.Policy{Limit: 100, Window: report.Duration(time.Second), Burst: 100}, Retries: []report.RetryResult{
		{Algorithm: "gcra", Strategy: "exponential", Clients: 1000, Runs: 1, CompletionMSMean: 151226, PeakArrivals: 511,
			WaveHeights: []int64{511, 400}, Bin: bin, Arrivals: []int64{0, 511, 0, 0, 400}, Amplification: 5.88},
		{Algorithm: "gcra", Strategy: "full-jitter", Clients: 1000, Runs: 1, CompletionMSMean: 24821, PeakArrivals: 21,
			Bin: bin, Arrivals: []int64{0, 21, 20, 19}, Amplification: 4.02},
	}}
}

func TestHerdFiguresAndRetryFindings(t *testing.T) {
	r := stormReport()
	figs := Figures(r)
	if len(figs) != 1 || figs[0].Name != "herd" || len(figs[0].Panels) != 2 {
		t.Fatalf("figures: %d", len(figs))
	}
	r.Retries = append(r.Retries, report.RetryResult{Algorithm: "token-bucket", Strategy: "exponential", Bin: r.Retries[0].Bin, Arrivals: []int64{3}})
	figs = HerdFigures(r)
	if len(figs) != 2 || figs[0].Name != "herd-gcra" || figs[1].Name != "herd-token-bucket" {
		t.Fatalf("one herd per algorithm, named by it: %v", len(figs))
	}
	r.Retries = r.Retries[:2]
	f := report.RetryFindings(r)
	want := "gcra: the highest retry wave (most retries in one 10ms bin) was 511 (exponential), 21 (full-jitter); synchronized waves: exponential 2; drained in 151.2 s (exponential), 24.8 s (full-jitter); load amplification (server calls ÷ client requests) 5.88 (exponential), 4.02 (full-jitter)."
	if len(f) != 1 || f[0] != want {
		t.Fatalf("findings %q", f)
	}
	r.Retries[1].GiveUps = 12.5
	if f := report.RetryFindings(r); !strings.HasSuffix(f[0], "4.02 (full-jitter); jobs given up a run: 12.5 (full-jitter).") {
		t.Fatalf("findings do not name the give-ups: %q", f)
	}
	r.Retries[1].GiveUps = 0
	tables := Tables(r, report.Columns{})
	if len(tables) != 1 || tables[0].Header[1] != "strategy" {
		t.Fatalf("a clients-only report shows the retry table alone: %+v", tables)
	}
	if got := report.AllFindings(r); len(got) != 1 || strings.Contains(got[0], "No algorithm ran") {
		t.Fatalf("findings %q", got)
	}
	var b strings.Builder
	if err := WriteIndex(&b, []IndexPage{{Report: r, Dir: "storm"}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "<th>highest<br>wave</th>") || !strings.Contains(b.String(), "storm/results.csv") {
		t.Fatalf("index lacks the retry table:\n%s", b.String())
	}
	if got := Tables(&report.Report{Scenario: "x"}, report.Columns{}); len(got) != 1 || got[0].Header[0] != "algorithm" || got[0].Header[1] != "requests" {
		t.Fatal("a report with nothing keeps the results table")
	}
}

// An overloaded backend's report draws the load per strategy against its capacity, one
// panel per strategy, beside the herd.
func TestLoadFiguresDrawCapacity(t *testing.T) {
	r := stormReport()
	for i := range r.Retries {
		r.Retries[i].Algorithm, r.Retries[i].Capacity = "overload", 200
		r.Retries[i].Attempts = []int64{5, 600, 3}
	}
	figs := RetryFigures(r)
	if len(figs) != 2 || figs[0].Name != "herd" || figs[1].Name != "load" || len(figs[1].Panels) != 2 {
		t.Fatalf("figures: %d", len(figs))
	}
	var svg bytes.Buffer
	if err := figs[1].Render(&svg, "svg"); err != nil {
		t.Fatal(err)
	}
	// 200 requests a second is 2 per 10 ms bin.
	for _, want := range []string{"capacity (2 per bin)", "a backend of 200 requests/s", "all attempts", "retries"} {
		if !strings.Contains(svg.String(), want) {
			t.Errorf("load chart lacks %q", want)
		}
	}
	var summary strings.Builder
	if err := WriteSummary(&summary, r, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(summary.String(), "Backend capacity: 200 requests per second") || strings.Contains(summary.String(), "Policy: ") {
		t.Fatalf("an overloaded backend's summary states its capacity, not a limit:\n%s", summary.String())
	}
	r.Retries[0].Attempts = nil
	if figs := LoadFigures(r); len(figs) != 1 || len(figs[0].Panels) != 1 {
		t.Fatalf("a result without attempts draws no panel: %d", len(figs))
	}
}
