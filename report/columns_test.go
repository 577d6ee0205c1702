package report

import (
	"strings"
	"testing"
	"time"
)

func identityReport() *Report {
	legit, attacker, peak, broken := 0.01, 0.4, 5.5, 0.2
	blocked := int64(3)
	r := &Report{Scenario: "login", Policy: Policy{Limit: 5, Window: Duration(5 * time.Minute), Burst: 5}}
	for _, alg := range []string{"fixed-window", "sliding-window", "token-bucket", "gcra"} {
		r.Results = append(r.Results, Result{Algorithm: alg, Requests: 7789, Admitted: 3497, Rejected: 4292,
			PeakWindowAdmitted: 30, OverAdmission: 1.5, LegitRejectRate: &legit, AttackerAdmitRate: &attacker,
			LegitUsers: 213, LegitUsersBlocked: &blocked, LongRunPeak: &peak, PageLoads: 10, BrokenPageLoads: &broken,
			StateBytesPerKey: 16, DelayMeanMS: 0})
	}
	return r
}

func TestMarkdownJoinsHeaderLines(t *testing.T) {
	var b strings.Builder
	if err := WriteMarkdown(&b, Table{Header: []string{"algorithm", "over-\nadmission", "false\nrejects"}, Rows: [][]string{{"gcra", "1.00", "0%"}}}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "| algorithm | over-admission | false rejects |\n") {
		t.Errorf("markdown:\n%s", b.String())
	}
}

// A machine name reads as its table's header; an unknown one as itself.
func TestColumnHeader(t *testing.T) {
	for name, want := range map[string]string{"over_admission": "over-\nadmission", "legit_reject_rate": "legit\nrefused",
		"store_round_trips": ColumnHeader("store_round_trips"), "no_such": "no_such"} {
		if got := ColumnHeader(name); got != want {
			t.Errorf("ColumnHeader(%q) = %q, want %q", name, got, want)
		}
	}
	if ColumnHeader("store_round_trips") == "store_round_trips" {
		t.Error("a fleet column reads as its machine name")
	}
}
