package report

import (
	"fmt"
	"io"
	"strings"
)

// maxRecapAlgorithms bounds the algorithms the recap names one line each; the others
// are counted on one more line.
const maxRecapAlgorithms = 10

// WriteRecap writes the verdict again in a few lines, for the end of a long report whose
// matrix has scrolled away: for each algorithm of the plain scenarios, in how many it
// kept the promise and its worst over-admission, then the fleets' worst. It writes
// nothing for a verdict of one scenario, whose table is the last thing printed anyway.
func WriteRecap(w io.Writer, v Verdict, width int) error {
	type tally struct {
		ran, kept, beyond int
		worst             float64
		worstWhere        string
		worstMark         string
	}
	var order []string
	tallies := map[string]*tally{}
	scenarios := map[string]bool{}
	var fleetWorst float64
	var fleetWhere, fleetAlg, fleetMark string
	fleetRows := 0
	for _, b := range v.Blocks {
		for _, g := range b.Groups {
			for _, r := range g.Rows {
				scenarios[r.Scenario] = true
				if g.Fleet {
					fleetRows++
				}
				for i, c := range r.Cells {
					if !c.Ran {
						continue
					}
					alg := b.Algorithms[i]
					if g.Fleet {
						if c.Over > fleetWorst {
							fleetWorst, fleetWhere, fleetAlg, fleetMark = c.Over, r.Scenario, alg, c.Mark()
						}
						continue
					}
					t := tallies[alg]
					if t == nil {
						t = &tally{}
						tallies[alg] = t
						order = append(order, alg)
					}
					t.ran++
					if !c.Broke {
						t.kept++
					}
					if c.Beyond {
						t.beyond++
					}
					if c.Over > t.worst {
						t.worst, t.worstWhere, t.worstMark = c.Over, r.Scenario, c.Mark()
					}
				}
			}
		}
	}
	for _, s := range v.RetryOnly {
		scenarios[s] = true
	}
	if len(scenarios) < 2 {
		return nil
	}
	var lines []string
	lines = append(lines, fmt.Sprintf("Recap of %d scenarios: where each algorithm kept the promise, and its worst:", len(scenarios)))
	name := 0
	for _, a := range order[:min(len(order), maxRecapAlgorithms)] {
		name = max(name, DisplayWidth(a))
	}
	for i, a := range order {
		if i == maxRecapAlgorithms {
			lines = append(lines, fmt.Sprintf("  … and %d more algorithms (the matrix at the top names them)", len(order)-i))
			break
		}
		t := tallies[a]
		line := fmt.Sprintf("  %s  kept it in %d of %d", padRight(a, name), t.kept, t.ran)
		if t.kept < t.ran {
			line += fmt.Sprintf(", worst %s %.2f× (%s)", t.worstMark, t.worst, t.worstWhere)
		}
		if t.beyond > 0 {
			line += fmt.Sprintf("; beyond its own bound in %d", t.beyond)
		}
		lines = append(lines, line)
	}
	if fleetRows > 0 {
		if fleetWorst > 1+overTolerance {
			lines = append(lines, fmt.Sprintf("  fleets (%d %s): the worst variant %s %.2f× (%s, %s)", fleetRows, plural(fleetRows, "scenario", "scenarios"), fleetMark, fleetWorst, fleetAlg, fleetWhere))
		} else {
			lines = append(lines, fmt.Sprintf("  fleets (%d %s): every variant kept it", fleetRows, plural(fleetRows, "scenario", "scenarios")))
		}
	}
	if strings.Contains(strings.Join(lines[1:], "\n"), "worst ") {
		// The matrix's legend has scrolled away with it.
		lines = append(lines, "  ("+ByDesignMark+" within the algorithm's own documented bound, by design; "+BrokeMark+" beyond it)")
	}
	var b strings.Builder
	for _, l := range lines {
		if DisplayWidth(l) <= width {
			b.WriteString(l + "\n")
			continue
		}
		for _, wrapped := range Wrap(l, width, "    ") {
			b.WriteString(wrapped + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
