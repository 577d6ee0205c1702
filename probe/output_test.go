package probe

import (
	"encoding/csv"
	"strings"
	"testing"
	"time"

	"github.com/rlsim/rlsim/report"
)

// probeReport is a probe's report with a model that differed on n decisions and, when
// identified, the configurations --identify found.
func probeReport(n int, identified bool) Report {
	agreement, real, jittered := 0.9, n, 0
	r := TargetReport{Target: "http://127.0.0.1/", Result: Result{Requests: 40, Admitted: 20, Rejected: 20},
		Model: "gcra", ModelAgreement: &agreement, ModelDifferences: &real, ModelWithinJitter: &jittered}
	for i := range n {
		r.ModelDiffering = append(r.ModelDiffering, ModelDifference{Seq: i + 1, Key: "k", Allowed: true})
	}
	if identified {
		r.Identified = []Identified{{Model: "fixed-window", Agreement: 1, Agreed: 40, Decisions: 40}}
	}
	return Report{Target: r.Target, Scenario: "s", Seed: 1, Policy: ReportPolicy{Limit: 20, Window: report.Duration(time.Second)},
		TimeScale: 1, Results: []TargetReport{r}}
}

// The CSV row has a cell for every column, with a model, with --identify and without
// either, so a column added to one and not the other fails here.
func TestReportCSVHasACellPerColumn(t *testing.T) {
	bare := probeReport(0, false)
	bare.Results[0].Model, bare.Results[0].ModelAgreement = "", nil
	for _, rep := range []Report{probeReport(2, true), probeReport(0, false), bare} {
		var b strings.Builder
		if err := rep.WriteCSV(&b); err != nil {
			t.Fatal(err)
		}
		rows, err := csv.NewReader(strings.NewReader(b.String())).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 2 || len(rows[0]) != len(CSVColumns) || len(rows[1]) != len(CSVColumns) {
			t.Fatalf("%d rows of %d and %d cells; want 2 of %d", len(rows), len(rows[0]), len(rows[len(rows)-1]), len(CSVColumns))
		}
		at := func(col string) string {
			for i, c := range CSVColumns {
				if c == col {
					return rows[1][i]
				}
			}
			t.Fatalf("no column %s", col)
			return ""
		}
		if at("requests") != "40" || at("window") != "1" || at("model") != rep.Results[0].Model {
			t.Errorf("requests %q, window %q, model %q", at("requests"), at("window"), at("model"))
		}
		if len(rep.Results[0].Identified) > 0 && at("identified") != "fixed-window" {
			t.Errorf("identified %q, want fixed-window", at("identified"))
		}
	}
}

// The tables are the measurement, the model's differences (at most maxDifferencesShown
// rows, then a note), the identified configurations when there are any, and the checks of
// the headers, with the Retry-After check only when retries were sent on it.
func TestReportTables(t *testing.T) {
	rep := probeReport(maxDifferencesShown+3, true)
	tables := rep.Tables(true)
	if len(tables) != 4 {
		t.Fatalf("%d tables, want 4", len(tables))
	}
	model := tables[1]
	if len(model.Rows) != maxDifferencesShown || len(model.Notes) != 1 || !strings.Contains(model.Notes[0], "and 3 more") {
		t.Errorf("model table: %d rows, notes %q", len(model.Rows), model.Notes)
	}
	if !strings.HasPrefix(tables[2].Title, "behaves like fixed-window") {
		t.Errorf("identified table titled %q", tables[2].Title)
	}
	if checks := tables[3]; len(checks.Rows) != 3 {
		t.Errorf("with retries, %d header checks; want 3", len(checks.Rows))
	}
	plain := probeReport(0, false).Tables(false)
	if len(plain) != 3 || plain[1].Header != nil || len(plain[2].Rows) != 2 {
		t.Errorf("without differences, --identify or retries: %d tables, model header %q, %d checks", len(plain), plain[1].Header, len(plain[2].Rows))
	}
}

// The measurement's note says what the promise was judged on: the send times plus half
// the least round trip, or the server's log, with how many requests were found in it.
func TestReportSaysWhatThePromiseWasJudgedOn(t *testing.T) {
	rep := probeReport(0, false)
	rep.Results[0].OneWayMS = 0.25
	notes := strings.Join(rep.Tables(false)[0].Notes, "\n")
	if !strings.Contains(notes, "Promise on the arrivals (sent + 0.25 ms, half the least round trip)") || strings.Contains(notes, "log") {
		t.Errorf("without --server-log, the notes read:\n%s", notes)
	}
	rep.Results[0].ServerLog = &LogMatch{File: "access.log", Matched: 40, Missing: make([]MissingRequest, 2), OffsetMS: 0.31}
	notes = strings.Join(rep.Tables(false)[0].Notes, "\n")
	if !strings.Contains(notes, "Promise on the arrivals in the server's log access.log (40 of 42 requests found there, the rest at sent + 0.31 ms") {
		t.Errorf("with --server-log, the notes read:\n%s", notes)
	}
}
