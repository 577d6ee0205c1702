package report

import (
	"slices"
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

// By default a table keeps, within its width, the most important columns for its kind of
// run: who was hurt before what state costs; the columns it drops are the least
// important.
func TestDefaultColumnsFitAndKeepWhatMatters(t *testing.T) {
	for _, width := range []int{100, 70} {
		tb := ResultsTable(identityReport(), Columns{Width: width})
		if w := boxWidth(dropEmptyColumns(tb)); w > width {
			t.Errorf("width %d: table of %d", width, w)
		}
		for _, want := range []string{"algorithm", "over_admission", "legit_reject_rate", "attacker_admit_rate"} {
			if !slices.Contains(tb.Names, want) {
				t.Errorf("width %d: %v lacks %s", width, tb.Names, want)
			}
		}
		if slices.Contains(tb.Names, "requests") {
			t.Errorf("width %d: %v keeps requests, the least important", width, tb.Names)
		}
	}
	wide := ResultsTable(identityReport(), Columns{Wide: true})
	if !slices.Equal(wide.Names, names(resultTableColumns)) || wide.Width != 0 {
		t.Errorf("--wide: %v, width %d", wide.Names, wide.Width)
	}
	picked := ResultsTable(identityReport(), Columns{Names: []string{"long_run_peak", "requests", "effective_limit"}})
	if !slices.Equal(picked.Names, []string{"algorithm", "long_run_peak", "requests"}) || picked.Header[1] != "long-run\npeak" {
		t.Errorf("--columns: %v %q", picked.Names, picked.Header)
	}
	// A note explains a column only when the table shows it.
	if notes := strings.Join(picked.Notes, " "); !strings.Contains(notes, "long-run peak: the most units") || strings.Contains(notes, "users blocked") {
		t.Errorf("notes %q", picked.Notes)
	}
	if bad := CheckColumns([]string{"over_admission", "stale_reads", "calls_mean", "colour"}); bad != "colour" {
		t.Errorf("CheckColumns = %q", bad)
	}
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
