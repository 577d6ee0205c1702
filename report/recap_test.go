package report

import (
	"strings"
	"testing"
)

func TestRecapCountsWhereEachAlgorithmKeptThePromise(t *testing.T) {
	v := Verdict{
		Blocks: []VerdictBlock{
			{Algorithms: []string{"fixed-window", "sliding-log"}, Groups: []VerdictGroup{{Cost: CostFalseRejects, Rows: []VerdictRow{
				{Scenario: "a", Cells: []VerdictCell{{Ran: true, Over: 2, Broke: true}, {Ran: true, Over: 1}}},
				{Scenario: "b", Cells: []VerdictCell{{Ran: true, Over: 1.5, Broke: true, Beyond: true}, {Ran: false}}},
				{Scenario: "c", Cells: []VerdictCell{{Ran: true, Over: 0.9}, {Ran: true, Over: 1}}},
			}}}},
			{Algorithms: []string{"gcra"}, Groups: []VerdictGroup{{Cost: CostLegitRefused, Fleet: true, Rows: []VerdictRow{
				{Scenario: "f", Cells: []VerdictCell{{Ran: true, Over: 3.25, Broke: true, Beyond: true}}},
			}}}},
		},
		RetryOnly: []string{"r"},
	}
	var b strings.Builder
	if err := WriteRecap(&b, v, DefaultWidth); err != nil {
		t.Fatal(err)
	}
	want := `Recap of 5 scenarios: where each algorithm kept the promise, and its worst:
  fixed-window  kept it in 1 of 3, worst ~ 2.00× (a); beyond its own bound in 1
  sliding-log   kept it in 2 of 2
  fleets (1 scenario): the worst variant ✗ 3.25× (gcra, f)
  (~ within the algorithm's own documented bound, by design; ✗ beyond it)
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	// One scenario: the table is the last thing printed anyway.
	one := Verdict{Blocks: []VerdictBlock{{Algorithms: []string{"gcra"}, Groups: []VerdictGroup{{Rows: []VerdictRow{{Scenario: "a", Cells: []VerdictCell{{Ran: true, Over: 1}}}}}}}}}
	b.Reset()
	WriteRecap(&b, one, DefaultWidth)
	if b.Len() != 0 {
		t.Errorf("a recap of one scenario: %q", b.String())
	}
}
