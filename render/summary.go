package render

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/rlsim/rlsim/report"
)

// WriteSummary writes a scenario's summary.md: what ran, the results table in Markdown,
// the sentences that say what it shows, and the charts beside it.
func WriteSummary(w io.Writer, r *report.Report, charts []report.ChartFile) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", r.Scenario)
	if r.Description != "" {
		fmt.Fprintf(&b, "%s\n\n", r.Description)
	}
	if capacity := report.BackendCapacity(r); capacity > 0 {
		// The clients met an overloaded backend: the policy is its capacity, no limit.
		fmt.Fprintf(&b, "Backend capacity: %g requests per second (its load measured over %s), no limiter, seed %d. Reproduce with `%s`.\n\n",
			capacity, time.Duration(r.Policy.Window), r.Seed, r.Command())
	} else {
		fmt.Fprintf(&b, "Policy: %d per %s (burst %d), keyed on %s, seed %d. Reproduce with `%s`.\n\n",
			r.Policy.Limit, time.Duration(r.Policy.Window), r.Policy.Burst, r.Key, r.Seed, r.Command())
	}
	for _, t := range Tables(r, report.Columns{}) {
		if err := report.WriteMarkdown(&b, t); err != nil {
			return err
		}
		b.WriteString("\n")
	}
	for _, f := range report.AllFindings(r) {
		fmt.Fprintf(&b, "- %s\n", f)
	}
	if len(charts) > 0 {
		b.WriteString("\n## Charts\n\n")
		for _, c := range charts {
			fmt.Fprintf(&b, "![%s](%s)\n\n", c.Title, c.Name)
		}
	}
	b.WriteString("Files: [results.json](results.json), [results.csv](results.csv), [timeline.csv](timeline.csv)")
	if len(r.Retries) > 0 {
		b.WriteString(", [retries.csv](retries.csv)")
	}
	b.WriteString(".\n")
	_, err := io.WriteString(w, b.String())
	return err
}
