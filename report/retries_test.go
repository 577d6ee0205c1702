package report

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestRetriesTableAndCSV(t *testing.T) {
	share := 0.0
	r := &Report{Scenario: "storm", Seed: 3, Retries: []RetryResult{
		{Algorithm: "gcra", Strategy: "exponential", Clients: 1000, Runs: 2, CallsMean: 5880.5, CompletionMSMean: 151226.5,
			PeakArrivals: 511, WaveHeights: []int64{511, 471, 443, 406, 370, 304, 213, 101, 69}, WaveThreshold: 50, Bin: Duration(10 * time.Millisecond)},
		{Algorithm: "gcra", Strategy: "full-jitter", Clients: 1000, Runs: 2, CallsMean: 4020, CompletionMSMean: 24821,
			PeakArrivals: 21, WaveThreshold: 50, Bin: Duration(10 * time.Millisecond), RetryAfterRefusedShare: &share},
	}}
	var text bytes.Buffer
	if err := WriteText(&text, RetriesTable(r)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"storm — clients retrying, seed 3", "511 471 443 406 370 304 213 101 …", "151226.5", "0%", "time to drain", "at least 50 retries", "most retries in one 10ms bin"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, text.String())
		}
	}
	var csv bytes.Buffer
	if err := WriteRetriesCSV(&csv, []*Report{r}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(csv.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], ",9,511 471 443 406 370 304 213 101 69,50,10ms,") ||
		lines[2] != "storm,3,gcra,full-jitter,1000,2,4020,24821,21,0,,50,10ms,0,0,0,0,0,0,0,0,0,0,0,0,0," {
		t.Fatalf("csv:\n%s", csv.String())
	}
}
