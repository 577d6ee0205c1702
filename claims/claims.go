// Package claims reproduces the quantitative claims of the design notes rlsim grew from
// (DESIGN.md's seed article) and says, for each, what rlsim measured and whether the claim
// holds. Each claim is one Check with its own small Measure function, so a capability that
// lands later (clients and backoff, the distributed store, keying) is wired up by giving
// its claim a Measure; until then the claim reports NotYetMeasurable, never a pass.
package claims

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"strconv"
	"time"

	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/scenario"
)

// Verdict is what the measurement says about a claim.
type Verdict string

// The verdicts, as printed.
const (
	Holds            Verdict = "holds"
	HoldsWithCaveat  Verdict = "holds with a caveat"
	DoesNotHold      Verdict = "does not hold"
	NotYetMeasurable Verdict = "not yet measurable"
)

// Result is one row of `rlsim claims`. The JSON names are part of the command contract.
type Result struct {
	Claim    string  `json:"claim"`
	Measured string  `json:"measured"`
	Verdict  Verdict `json:"verdict"`
	Command  string  `json:"command"`
}

// Check is one claim and how to measure it.
type Check struct {
	// Claim is the claim in rlsim's words.
	Claim string
	// Command is the rlsim command line that reproduces the measurement.
	Command string
	// Measure runs the reproduction and returns what it found and the verdict. Nil means
	// the capability it needs has not landed: the claim shows as NotYetMeasurable.
	Measure func() (measured string, verdict Verdict, err error)
}

// Run measures every check in order. A check that fails to run is an error (a claim that
// does not hold is not): the reproduction itself is broken.
func Run(checks []Check) ([]Result, error) {
	out := make([]Result, 0, len(checks))
	for _, c := range checks {
		r := Result{Claim: c.Claim, Command: c.Command, Measured: "-", Verdict: NotYetMeasurable}
		if c.Measure != nil {
			m, v, err := c.Measure()
			if err != nil {
				return nil, fmt.Errorf("claim %q: %w", c.Claim, err)
			}
			r.Measured, r.Verdict = m, v
		}
		out = append(out, r)
	}
	return out, nil
}

// Table is the claims as a report table: claim, measured, verdict, command.
func Table(results []Result) report.Table {
	t := report.Table{Header: []string{"claim", "measured", "verdict", "command"}, Prose: true}
	for _, r := range results {
		t.Rows = append(t.Rows, []string{r.Claim, r.Measured, string(r.Verdict), r.Command})
	}
	return t
}

// run runs a built-in scenario with the given algorithms and returns its report and, when
// decisions is set, the per-request decisions.
type run struct {
	name       string
	algorithms []string
	decisions  bool
}

type decision struct {
	at        time.Duration
	key       string
	algorithm string
	allowed   bool
}

func (r run) do() (*report.Report, []decision, error) {
	sc, err := scenario.Load(r.name)
	if err != nil {
		return nil, nil, err
	}
	opts := scenario.Options{Algorithms: r.algorithms}
	var buf bytes.Buffer
	var cw *csv.Writer
	if r.decisions {
		cw = csv.NewWriter(&buf)
		opts.Decisions = scenario.NewDecisionWriter(cw)
	}
	rep, err := scenario.Run(sc, opts)
	if err != nil {
		return nil, nil, err
	}
	if !r.decisions {
		return rep, nil, nil
	}
	if err := opts.Decisions.Flush(); err != nil {
		return nil, nil, err
	}
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		return nil, nil, err
	}
	var ds []decision
	for _, row := range rows[1:] { // t_ns,key,cost,algorithm,allowed,reference_allowed,scenario
		ns, err := strconv.ParseInt(row[0], 10, 64)
		if err != nil {
			return nil, nil, err
		}
		ds = append(ds, decision{at: time.Duration(ns), key: row[1], algorithm: row[3], allowed: row[4] == "true"})
	}
	return rep, ds, nil
}

func result(rep *report.Report, algorithm string) (report.Result, error) {
	for _, x := range rep.Results {
		if x.Algorithm == algorithm {
			return x, nil
		}
	}
	return report.Result{}, fmt.Errorf("scenario %s: no result for %s", rep.Scenario, algorithm)
}

func percent(v float64) string {
	return strconv.FormatFloat(v*100, 'g', 3, 64) + "%"
}
