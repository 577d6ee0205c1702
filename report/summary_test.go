package report

import (
	"strings"
	"testing"
	"time"
)

func sampleReport() *Report {
	return &Report{
		Scenario: "sample", Description: "a sample", Seed: 7, Key: "user",
		Policy: Policy{Limit: 100, Window: Duration(time.Minute), Burst: 100},
		Results: []Result{
			{Algorithm: "fixed-window", Requests: 200, Admitted: 200, PeakWindowAdmitted: 200, OverAdmission: 2, StateBytesPerKey: 16},
			{Algorithm: "sliding-window", Requests: 200, Admitted: 99, PeakWindowAdmitted: 100, OverAdmission: 1.004, FalseReject: 3, FalseRejectRate: 0.015, StateBytesPerKey: 24},
			{Algorithm: "sliding-log", Requests: 200, Admitted: 100, PeakWindowAdmitted: 100, OverAdmission: 1, StateBytesPerKey: 2096},
		},
	}
}

func TestFindingsSayWhatTheTableShows(t *testing.T) {
	got := Findings(sampleReport())
	want := []string{
		"Over the limit of 100 in some trailing 1m0s window: fixed-window 2.00× (200).",
		"Refused although the limit allowed them (false rejects): sliding-window 1.50% (3 requests).",
		"Memory per key ranges from 16 bytes (fixed-window) to 2096 bytes (sliding-log), 131× as much.",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	kept := sampleReport()
	kept.Results = kept.Results[2:]
	got = Findings(kept)
	if got[0] != "Every algorithm kept the promise: no trailing 1m0s window held more than the limit of 100." ||
		got[1] != "No algorithm refused a request that the limit allowed." || len(got) != 2 {
		t.Fatalf("findings = %q", got)
	}
	if got := Findings(&Report{}); len(got) != 1 {
		t.Fatalf("empty report: %q", got)
	}
}
