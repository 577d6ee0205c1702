package render

import (
	"strings"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/traffic"
)

// TestShadowModeIsReportedAsWouldRefuse: a rule in shadow mode admits everything, and the
// result says how many of those it would have refused, in the JSON field and a note
// under the table; the same rule enforced leaves the field out.
func TestShadowModeIsReportedAsWouldRefuse(t *testing.T) {
	results := map[string]report.Result{}
	for _, spec := range []string{
		"envoy-ratelimit:unit=second requests_per_unit=3 shadow_mode",
		"envoy-ratelimit:unit=second requests_per_unit=3",
	} {
		lim, err := algorithms.New(spec, algorithms.Policy{Limit: 3, Window: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		c := report.NewCollector(3, time.Second, time.Second)
		for i := range int64(10) {
			for key := range uint32(2) {
				now := i * sec / 10 // ten requests per key in one second
				c.Observe(key, now, 1, traffic.Legit, lim.Allow(key, now, 1))
			}
		}
		results[spec] = c.Result(lim)
	}
	shadow := results["envoy-ratelimit:unit=second requests_per_unit=3 shadow_mode"]
	enforced := results["envoy-ratelimit:unit=second requests_per_unit=3"]
	if shadow.Admitted != 20 || shadow.WouldRefuse != 14 || enforced.Admitted != 6 || enforced.WouldRefuse != 0 {
		t.Fatalf("shadow: admitted %d, would refuse %d; enforced: admitted %d, would refuse %d",
			shadow.Admitted, shadow.WouldRefuse, enforced.Admitted, enforced.WouldRefuse)
	}
	table := ResultsTable(&report.Report{Scenario: "s", Results: []report.Result{shadow, enforced}}, report.Columns{})
	notes := strings.Join(table.Notes, "\n")
	if !strings.Contains(notes, "shadow_mode: shadow mode: every request passed; 14 of them the rule would have refused") ||
		strings.Count(notes, "shadow mode") != 1 {
		t.Errorf("notes:\n%s", notes)
	}
}
