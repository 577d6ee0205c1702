package claims

import (
	"errors"
	"strings"
	"testing"
)

func TestUnmeasuredClaimsAreNeverPassed(t *testing.T) {
	got, err := Run([]Check{{Claim: "c", Command: "rlsim x"}})
	if err != nil {
		t.Fatal(err)
	}
	if got[0] != (Result{Claim: "c", Measured: "-", Verdict: NotYetMeasurable, Command: "rlsim x"}) {
		t.Fatalf("got %+v", got[0])
	}
}

func TestBrokenReproductionIsAnError(t *testing.T) {
	boom := errors.New("boom")
	_, err := Run([]Check{{Claim: "c", Measure: func() (string, Verdict, error) { return "", "", boom }}})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), `claim "c"`) {
		t.Fatalf("err = %v", err)
	}
}

func TestEveryClaimHasWordsAndACommand(t *testing.T) {
	all := All()
	if len(all) < 15 {
		t.Fatalf("%d claims, the notes make 15", len(all))
	}
	for _, c := range all {
		if c.Claim == "" || !strings.HasPrefix(c.Command, "rlsim ") {
			t.Errorf("claim %+v lacks words or an rlsim command", c)
		}
	}
}

// The cheap reproductions, measured for real: the figures the notes give.
func TestMeasuredClaims(t *testing.T) {
	tests := []struct {
		name    string
		measure measureFunc
		verdict Verdict
		want    string
	}{
		{"boundary", boundaryBurst("boundary-burst", 100), Holds, "admitted 200 of 200 between 10:00:59.900 and 10:01:00.100 (200ms)"},
		{"boundary 6000", boundaryBurst("boundary-6000", 6000), Holds, "admitted 12000 of 12000"},
		{"estimate 95", slidingEstimate, Holds, "5 of 10 admitted"},
		{"shorter window", shorterWindow, Holds, "100 requests at 100/min (2.00×), 2 at 2/s (2.00×)"},
		{"token bucket", tokenBucketBurst, Holds, "20 of 21 admitted at once"},
		{"log per element", slidingLogPerElement, HoldsWithCaveat, "bytes each; Redis not yet measured"},
		{"log vs counters", logToCountersRatio, DoesNotHold, "orders of magnitude"},
		{"page load fan-out", pageLoadFanOut, Holds, "sliding-log 80.5%, sliding-window 68.3%, token-bucket 0.11%"},
		{"full jitter", fullJitter, HoldsWithCaveat, "full jitter 795 calls in 4.8 s; exponential 1856 in 63.5 s (full makes 0.43× the calls)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, v, err := tt.measure()
			if err != nil {
				t.Fatal(err)
			}
			if v != tt.verdict || !strings.Contains(m, tt.want) {
				t.Errorf("got %q, %q; want %q containing %q", v, m, tt.verdict, tt.want)
			}
		})
	}
}

// The two claims measured on the long scenarios, run in full once.
func TestMeasuredClaimsOnLongScenarios(t *testing.T) {
	if testing.Short() {
		t.Skip("runs steady-poisson three times")
	}
	m, v, err := anyWindowTwice()
	if err != nil {
		t.Fatal(err)
	}
	if v != Holds || !strings.Contains(m, "boundary-burst 2.00×") {
		t.Errorf("any window twice: %q, %q", v, m)
	}
	m, v, err = twoCounterErrorRate()
	if err != nil {
		t.Fatal(err)
	}
	if v == NotYetMeasurable || !strings.Contains(m, "differing from the exact sliding log") {
		t.Errorf("two-counter error: %q, %q", v, m)
	}
}
