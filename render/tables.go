package render

import (
	"fmt"
	"strings"
	"time"

	"github.com/rlsim/rlsim/report"
)

// Tables are the human tables of one report, with the columns c chooses: the
// algorithms' results table when algorithms ran on open-loop traffic (or nothing else
// ran), with the refusals by layer and attacker campaigns when the run has them, then the
// retry table when the scenario has retrying clients.
func Tables(r *report.Report, c report.Columns) []report.Table {
	var out []report.Table
	if len(r.Results) > 0 || len(r.Retries) == 0 {
		t := ResultsTable(r, c)
		if r.Memory != nil {
			t.Notes = append(t.Notes, r.Memory.String())
		}
		out = append(out, t)
		if who, ok := report.WhoTable(r, c); ok {
			out = append(out, who)
		}
	}
	if len(r.Retries) > 0 {
		out = append(out, RetriesTable(r, c))
	}
	return out
}

// ResultsTable is the human table of one report (the fleet table for a fleet run), with
// the columns c chooses.
func ResultsTable(r *report.Report, c report.Columns) report.Table {
	if report.HasDistributed(r) {
		return DistributedTable(r, c)
	}
	t := chooseTable(fmt.Sprintf("%s — limit %d per %s, burst %d, key %s, seed %d",
		r.Scenario, r.Policy.Limit, time.Duration(r.Policy.Window), r.Policy.Burst, r.Key, r.Seed),
		report.ResultTableColumns, r.Results, c, report.ResultPreferred(r))
	t.Notes = append(t.Notes, report.IdentityNotes(r, report.DropEmptyColumns(t).Names)...)
	for _, x := range r.Results {
		if x.WouldRefuse > 0 {
			t.Notes = append(t.Notes, fmt.Sprintf("%s: shadow mode: every request passed; %d of them the rule would have refused (would_refuse)", x.Algorithm, x.WouldRefuse))
		}
	}
	if r.Log != nil {
		t.Lead = r.Log.String()
		if n := r.Log.PlacementNote(); n != "" {
			t.Notes = append(t.Notes, n)
		}
	}
	if len(r.UnreadLineProblems) > 0 {
		skipped := r.UnreadLines
		if r.Log != nil {
			skipped = r.Log.Unreadable + r.Log.OutOfOrder
		}
		t.Notes = append(t.Notes, fmt.Sprintf("%d log lines were not replayed; first: %s",
			skipped, strings.Join(r.UnreadLineProblems, "; ")))
	}
	return t
}
