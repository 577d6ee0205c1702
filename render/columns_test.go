package render

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlsim/rlsim/report"
)

func identityReport() *report.Report {
	legit, attacker, peak, broken := 0.01, 0.4, 5.5, 0.2
	blocked := int64(3)
	r := &report.Report{Scenario: "login", Policy: report.Policy{Limit: 5, Window: report.Duration(5 * time.Minute), Burst: 5}}
	for _, alg := range []string{"fixed-window", "sliding-window", "token-bucket", "gcra"} {
		r.Results = append(r.Results, report.Result{Algorithm: alg, Requests: 7789, Admitted: 3497, Rejected: 4292,
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
		tb := ResultsTable(identityReport(), report.Columns{Width: width})
		if w := boxWidth(report.DropEmptyColumns(tb)); w > width {
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
	wide := ResultsTable(identityReport(), report.Columns{Wide: true})
	if !slices.Equal(wide.Names, report.Names(report.ResultTableColumns)) || wide.Width != 0 {
		t.Errorf("--wide: %v, width %d", wide.Names, wide.Width)
	}
	picked := ResultsTable(identityReport(), report.Columns{Names: []string{"long_run_peak", "requests", "effective_limit"}})
	if !slices.Equal(picked.Names, []string{"algorithm", "long_run_peak", "requests"}) || picked.Header[1] != "long-run\npeak" {
		t.Errorf("--columns: %v %q", picked.Names, picked.Header)
	}
	// A note explains a column only when the table shows it.
	if notes := strings.Join(picked.Notes, " "); !strings.Contains(notes, "long-run peak: the most units") || strings.Contains(notes, "users blocked") {
		t.Errorf("notes %q", picked.Notes)
	}
	if bad := report.CheckColumns([]string{"over_admission", "stale_reads", "calls_mean", "colour"}); bad != "colour" {
		t.Errorf("CheckColumns = %q", bad)
	}
}
