package render

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlsim/rlsim/report"
)

func TestRetriesTableAndCSV(t *testing.T) {
	share := 0.0
	r := &report.Report{Scenario: "storm", Seed: 3, Retries: []report.RetryResult{
		{Algorithm: "gcra", Strategy: "exponential", Clients: 1000, Runs: 2, CallsMean: 5880.5, CompletionMSMean: 151226.5,
			PeakArrivals: 511, WaveHeights: []int64{511, 471, 443, 406, 370, 304, 213, 101, 69}, WaveThreshold: 50, Bin: report.Duration(10 * time.Millisecond)},
		{Algorithm: "gcra", Strategy: "full-jitter", Clients: 1000, Runs: 2, CallsMean: 4020, CompletionMSMean: 24821,
			PeakArrivals: 21, WaveThreshold: 50, Bin: report.Duration(10 * time.Millisecond), RetryAfterRefusedShare: &share},
	}}
	var text bytes.Buffer
	if err := WriteText(&text, RetriesTable(r, report.Columns{Wide: true})); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"storm — clients retrying, seed 3", "511 471 443 406 370 304 213 101 …", "151226.5", "0%", "until the last client finished", "at least 50 retries", "most retries in one 10ms bin"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, text.String())
		}
	}
	// By default: the load, the herd and its waves, the drain time and what only some
	// strategies have; the list of wave heights is in the wide table and the CSV.
	def := report.DropEmptyColumns(RetriesTable(r, report.Columns{}))
	for _, want := range []string{"algorithm", "strategy", "amplification", "completion_ms_mean", "peak_arrivals", "waves", "retry_after_refused_share"} {
		if !slices.Contains(def.Names, want) {
			t.Errorf("default columns %v lack %s", def.Names, want)
		}
	}
	if slices.Contains(def.Names, "wave_heights") {
		t.Errorf("default columns %v list the wave heights", def.Names)
	}
}
