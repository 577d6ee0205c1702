package report

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

func usersBlocked(x Result) string {
	if x.LegitUsersBlocked == nil {
		return "-"
	}
	return fmt.Sprintf("%d/%d", *x.LegitUsersBlocked, x.LegitUsers)
}

func optionalFloat(v *float64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatFloat(*v, 'f', 1, 64)
}

func optionalCount(v int64) string {
	if v == 0 {
		return "-"
	}
	return strconv.FormatInt(v, 10)
}

// WhoTable is the second table of an identity-aware report: per algorithm, how many
// requests each layer refused and how many attacker requests it passed, and what each
// attacker campaign got through overall. ok is false when the report has neither layers
// nor attackers. Every column shows (a layer or campaign the scenario names matters); a
// table wider than c allows is split, each part naming the algorithm.
func WhoTable(r *Report, c Columns) (t Table, ok bool) {
	if len(r.Results) == 0 {
		return Table{}, false
	}
	first := r.Results[0]
	if len(first.RefusalsByLayer) == 0 && len(first.Attackers) == 0 {
		return Table{}, false
	}
	t.Title = fmt.Sprintf("%s — refusals by layer and attacker campaigns (admitted/sent)", r.Scenario)
	t.Header, t.Names, t.Keys = []string{"algorithm"}, []string{"algorithm"}, 1
	for _, l := range first.RefusalsByLayer {
		t.Header = append(t.Header, "refused by\n"+l.Layer, "attacker past\n"+l.Layer)
		t.Names = append(t.Names, "refused_by_"+l.Layer, "attacker_passed_"+l.Layer)
	}
	for _, a := range first.Attackers {
		t.Header = append(t.Header, a.Actor)
		t.Names = append(t.Names, a.Actor)
	}
	for _, x := range r.Results {
		row := []string{x.Algorithm}
		for _, l := range x.RefusalsByLayer {
			row = append(row, strconv.FormatInt(l.Refused, 10), strconv.FormatInt(l.AttackerPassed, 10))
		}
		for _, a := range x.Attackers {
			row = append(row, fmt.Sprintf("%d/%d", a.Admitted, a.Requests))
		}
		t.Rows = append(t.Rows, row)
	}
	if !c.Wide {
		t.Width = c.MaxWidth()
	}
	return t, true
}

// IdentityNotes explain the identity columns of the results table that it shows
// (shown: the table's machine names).
func IdentityNotes(r *Report, shown []string) []string {
	var notes []string
	for _, x := range r.Results {
		if x.UnkeyedReason != "" {
			notes = append(notes, fmt.Sprintf("unkeyed: requests that could not be keyed were refused; first reason: %s", x.UnkeyedReason))
			break
		}
	}
	if len(r.Results) == 0 || r.Results[0].LongRunPeak == nil {
		return notes
	}
	var parts []string
	if slices.Contains(shown, "long_run_peak") {
		parts = append(parts, fmt.Sprintf("long-run peak: the most units one legit actor had admitted in any %d windows of %s, divided by %d",
			LongRunWindows, time.Duration(r.Policy.Window), LongRunWindows))
	}
	if slices.Contains(shown, "legit_users_blocked") {
		parts = append(parts, "users blocked: legit actors refused at least once")
	}
	if len(parts) > 0 {
		notes = append(notes, strings.Join(parts, "; "))
	}
	return notes
}
