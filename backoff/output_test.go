package backoff

import (
	"strings"
	"testing"

	"github.com/rlsim/rlsim/report"
)

// The verdicts name the winner of each question at the largest client count, say when a
// winner gave jobs up and who won among those that gave up none, tie when every strategy
// does the same, and name a strategy that wins all three.
func TestBackoffVerdicts(t *testing.T) {
	rs := []report.RetryResult{
		{Strategy: "a", Clients: 10, CallsMean: 50, CompletionMSMean: 900, PeakArrivals: 3},
		{Strategy: "b", Clients: 10, CallsMean: 20, CompletionMSMean: 2000, PeakArrivals: 3, GiveUps: 4},
		{Strategy: "c", Clients: 10, CallsMean: 30, CompletionMSMean: 1000, PeakArrivals: 3},
		{Strategy: "a", Clients: 5, CallsMean: 1, CompletionMSMean: 1, PeakArrivals: 0},
	}
	rep := Report{Bin: 10e6, Results: rs, Verdicts: Verdicts(rs)}
	got := strings.Join(rep.VerdictLines(), "\n")
	want := `at 10 clients, fewest calls: b, 20.0 calls a run (worst: a, 50.0) — but it gave up 4.0 jobs a run; of those that gave up none: c, 30.0
at 10 clients, fastest to drain: a, the last client done at 0.9 s (worst: b, 2.0 s)
at 10 clients, gentlest peak: every strategy ties, at most 3.0 retries in a 10ms bin
no strategy wins all three`
	if got != want {
		t.Fatalf("verdicts\n%s\nwant\n%s", got, want)
	}
	rs[1].CallsMean, rs[1].GiveUps = 60, 0
	rs[2].CompletionMSMean = 800
	rs[2].PeakArrivals = 1
	rep = Report{Bin: 10e6, Results: rs[:3], Verdicts: Verdicts(rs[:3])}
	if got := rep.VerdictLines(); got[len(got)-1] != "c wins all three" || strings.Contains(got[0], "at 10 clients") {
		t.Fatalf("verdicts %q", got)
	}
}
