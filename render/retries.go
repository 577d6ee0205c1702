package render

import (
	"fmt"
	"time"

	"github.com/rlsim/rlsim/report"
)

// RetriesTable is the human table of a report's retry results, with the columns c chooses.
func RetriesTable(r *report.Report, c report.Columns) report.Table {
	t := chooseTable(fmt.Sprintf("%s — clients retrying, seed %d", r.Scenario, r.Seed), report.RetryTableColumns, r.Retries, c, report.RetryPreferred(r))
	if len(r.Retries) > 0 {
		x := r.Retries[0]
		t.Notes = append(t.Notes, fmt.Sprintf("highest wave: the most retries in one %s bin (mean over runs); waves: runs of bins with at least %d retries each (first run); drained: until the last client finished",
			time.Duration(x.Bin), x.WaveThreshold))
	}
	return t
}
