package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rlsim/rlsim/algorithms"
)

// The verdict is what compare and run print before any detail: one matrix, scenario ×
// algorithm, that says in which scenario each algorithm kept the promise and at what
// cost, then one finding per scenario. The same model renders as text, Markdown and the
// colour-coded matrix that opens index.html.

// Broke reports whether an over-admission breaks the promise: above 1.00 by more than the
// rounding of the two-counter estimate and the buckets (overTolerance).
func Broke(overAdmission float64) bool { return overAdmission > 1+overTolerance }

// CostKind is what the second figure of a verdict cell measures: the price a scenario's
// algorithms paid, or the harm they let through, beside their over-admission.
type CostKind int

const (
	// CostFalseRejects is the false-reject rate: requests refused that the promise allowed.
	CostFalseRejects CostKind = iota
	// CostLegitRefused is the share of legit requests refused (runs that know who sent
	// what: actors, layers).
	CostLegitRefused
	// CostAttackerAdmitted is the share of attacker requests admitted.
	CostAttackerAdmitted
	// CostPagesBroken is the share of page loads with at least one refused request.
	CostPagesBroken
)

// Label is how the verdict names the figure.
func (k CostKind) Label() string {
	return [...]string{
		"false rejects (refused though the promise allowed them)",
		"legit requests refused",
		"attacker requests admitted",
		"page loads broken by a refusal",
	}[k]
}

// costKind is the figure that says what r's scenario is about beside the promise. A
// fleet speaks of the legit users it refused, when the scenario says who they are, and
// otherwise of its false rejects.
func costKind(r *Report) CostKind {
	has := func(f func(Result) bool) bool { return slices.ContainsFunc(r.Results, f) }
	switch {
	case HasDistributed(r) && has(func(x Result) bool { return x.LegitRejectRate != nil }):
		return CostLegitRefused
	case HasDistributed(r):
		return CostFalseRejects
	case has(func(x Result) bool { return x.BrokenPageLoads != nil }):
		return CostPagesBroken
	case has(func(x Result) bool { return x.AttackerAdmitRate != nil }):
		return CostAttackerAdmitted
	case has(func(x Result) bool { return x.LegitUsersBlocked != nil || len(x.RefusalsByLayer) > 0 }):
		return CostLegitRefused
	}
	return CostFalseRejects
}

// cost is x's figure of kind k, as a share.
func (k CostKind) cost(x Result) float64 {
	switch k {
	case CostLegitRefused:
		return Deref(x.LegitRejectRate)
	case CostAttackerAdmitted:
		return Deref(x.AttackerAdmitRate)
	case CostPagesBroken:
		return Deref(x.BrokenPageLoads)
	}
	return x.FalseRejectRate
}

// VerdictCell is one algorithm on one scenario.
type VerdictCell struct {
	// Ran is false where the scenario did not run the algorithm.
	Ran bool
	// Over is the over-admission (for a fleet, its worst variant's) and Broke whether it
	// broke the promise.
	Over  float64
	Broke bool
	// Beyond is whether the run broke the algorithm's own documented bound as well: it
	// admitted more in one window than the algorithm can by design (algorithms.Bound for
	// the run's policy and window), or the algorithm states no bound (a user's limiter, a
	// fleet's own protocol). A cell that broke the promise but is not Beyond did what its
	// algorithm documents: a token bucket of burst L admits up to 2L per window.
	Beyond bool
	// Cost is the second figure as printed, a share ("2.5%"); for a fleet, its worst
	// variant's.
	Cost string
}

// VerdictRow is one scenario: a cell per algorithm of its block.
type VerdictRow struct {
	Scenario string
	Cells    []VerdictCell
}

// VerdictGroup is the scenarios whose cells carry the same second figure. Fleet groups
// hold, in each cell, the algorithm's worst variant alone (the finding names the
// variants).
type VerdictGroup struct {
	Cost  CostKind
	Fleet bool
	Rows  []VerdictRow
}

// Label is how the matrix heads the group.
func (g VerdictGroup) Label() string {
	if g.Fleet {
		return "fleets, each algorithm's worst variant: over-admission · " + g.Cost.Label()
	}
	return "over-admission · " + g.Cost.Label()
}

// VerdictBlock is one matrix: its algorithm columns and its groups of scenarios. Fleets
// get a block of their own, their algorithms being others (lease, incr-expire).
type VerdictBlock struct {
	Algorithms []string
	Groups     []VerdictGroup
}

// ScenarioFinding is one scenario's verdict in a sentence.
type ScenarioFinding struct {
	Scenario, Text string
}

// Verdict is the answer to which algorithm kept the promise in which scenario.
type Verdict struct {
	Blocks []VerdictBlock
	// RetryOnly are the scenarios of retrying clients alone: there is no promise to judge,
	// and their findings say what the strategies did.
	RetryOnly []string
	Findings  []ScenarioFinding
}

// NewVerdict judges reports, in their order.
func NewVerdict(reports []*Report) Verdict {
	var v Verdict
	var plain, fleets []*Report
	for _, r := range reports {
		v.Findings = append(v.Findings, ScenarioFinding{r.Scenario, verdictFinding(r)})
		switch {
		case len(r.Results) == 0:
			v.RetryOnly = append(v.RetryOnly, r.Scenario)
		case HasDistributed(r):
			fleets = append(fleets, r)
		default:
			plain = append(plain, r)
		}
	}
	for _, rs := range [][]*Report{plain, fleets} {
		if len(rs) > 0 {
			v.Blocks = append(v.Blocks, verdictBlock(rs))
		}
	}
	return v
}

func verdictBlock(reports []*Report) VerdictBlock {
	var b VerdictBlock
	for _, r := range reports {
		for _, x := range r.Results {
			if !slices.Contains(b.Algorithms, x.Algorithm) {
				b.Algorithms = append(b.Algorithms, x.Algorithm)
			}
		}
	}
	// rlsim's six in their usual order, then the others as they came.
	rank := func(a string) int {
		if k := algorithms.Lookup(a); k != nil && k.Default {
			return k.Rank
		}
		return 1 << 30
	}
	slices.SortStableFunc(b.Algorithms, func(x, y string) int { return rank(x) - rank(y) })
	groups := map[CostKind]*VerdictGroup{}
	for _, r := range reports {
		kind := costKind(r)
		g := groups[kind]
		if g == nil {
			g = &VerdictGroup{Cost: kind, Fleet: HasDistributed(r)}
			groups[kind] = g
		}
		row := VerdictRow{Scenario: r.Scenario, Cells: make([]VerdictCell, len(b.Algorithms))}
		for i, alg := range b.Algorithms {
			row.Cells[i] = verdictCell(kind, r, alg)
		}
		g.Rows = append(g.Rows, row)
	}
	for kind := CostFalseRejects; kind <= CostPagesBroken; kind++ {
		if g := groups[kind]; g != nil {
			b.Groups = append(b.Groups, *g)
		}
	}
	return b
}

// verdictCell is alg on r: its over-admission and cost, or, for a fleet, its worst
// variant's (the first of equals).
func verdictCell(kind CostKind, r *Report, alg string) VerdictCell {
	var c VerdictCell
	var worst Result
	for _, x := range r.Results {
		if x.Algorithm != alg {
			continue
		}
		if !c.Ran || x.OverAdmission > c.Over {
			c.Over, worst = x.OverAdmission, x
		}
		c.Ran = true
	}
	if !c.Ran {
		return c
	}
	c.Cost = compactPercent(kind.cost(worst))
	c.Broke = Broke(c.Over)
	if c.Broke {
		most, ok := OwnBound(judgedBy(r.Policy, worst), alg)
		c.Beyond = !ok || c.Over > float64(most)/float64(judgedBy(r.Policy, worst).Limit)+overTolerance
	}
	return c
}

// judgedBy is the promise x's over-admission was measured against: the report's policy,
// or for a layered run its busiest layer's, whose limit is the peak over the
// over-admission (the layer's window and burst are not in the result: the report's
// window, and a burst of the limit, the default, stand for them; a bound at its own
// window depends on the limit and the burst alone).
func judgedBy(p Policy, x Result) Policy {
	if len(x.RefusalsByLayer) == 0 || x.OverAdmission <= 0 {
		return p
	}
	limit := int64(math.Round(float64(x.PeakWindowAdmitted) / x.OverAdmission))
	if limit < 1 || limit == p.Limit {
		return p
	}
	return Policy{Limit: limit, Window: p.Window}
}

// OwnBound is the most alg admits by design for one key in any window of the policy's
// length, in units of cost: its documented bound (algorithms.Bound) as a whole number.
// ok is false when alg names no algorithm of the catalogue or its model states no bound.
func OwnBound(p Policy, alg string) (most int64, ok bool) {
	spec, err := algorithms.Parse(alg)
	if err != nil {
		return 0, false
	}
	pol := algorithms.Policy{Limit: p.Limit, Window: time.Duration(p.Window), Burst: p.Burst}
	b, ok := spec.Model.Bound(pol, pol.Window)
	if !ok {
		return 0, false
	}
	return b.MaxAdmitted(), true
}

// compactPercent prints a share in at most five columns: "0%", "<0.1%", "2.5%", "50%".
func compactPercent(v float64) string {
	switch {
	case v == 0:
		return "0%"
	case v < 0.0005:
		return "<0.1%"
	case v < 0.0995:
		return strconv.FormatFloat(v*100, 'f', 1, 64) + "%"
	}
	return strconv.FormatFloat(v*100, 'f', 0, 64) + "%"
}

// Ratio is how a cell prints its over-admission.
func (c VerdictCell) Ratio() string {
	if !c.Ran {
		return "-"
	}
	return strconv.FormatFloat(c.Over, 'f', 2, 64)
}

// The marks of a cell above the promise: byDesignMark where the algorithm stayed within
// its own documented bound (it admitted what it says it may), brokeMark where it went
// beyond that bound too, or states none.
const (
	ByDesignMark = "~"
	BrokeMark    = "✗"
)

// Mark is the cell's mark: "" where the promise held, byDesignMark or brokeMark.
func (c VerdictCell) Mark() string {
	switch {
	case !c.Broke:
		return ""
	case c.Beyond:
		return BrokeMark
	}
	return ByDesignMark
}

// The verdict's opening lines: the question it answers (as the text's first line and as
// the Markdown section's first sentence) and how to read a cell.
const (
	verdictTitle    = "Verdict: did each algorithm keep its promise, at most the limit in any trailing window?"
	verdictQuestion = "Did each algorithm keep its promise, at most the limit in any trailing window?"
	verdictLegend   = "A cell: the busiest window over the limit, then its group's cost (- not run)."
	verdictByDesign = "Above 1.00 the promise broke: " + ByDesignMark + " within the algorithm's own documented bound (by design);"
	verdictBeyond   = BrokeMark + " beyond that bound too, or the algorithm states none."
)

// WriteVerdictText writes the verdict as text no wider than width (wider only if one
// scenario name is): the matrix, each block split into several when its algorithms do
// not fit side by side, then one finding per scenario.
func WriteVerdictText(out io.Writer, v Verdict, width int) error {
	var b strings.Builder
	writeVerdictText(&b, v, width)
	_, err := io.WriteString(out, b.String())
	return err
}

func writeVerdictText(w *strings.Builder, v Verdict, width int) {
	if len(v.Blocks) > 0 {
		for _, line := range Wrap(verdictTitle, width, "") {
			w.WriteString(line + "\n")
		}
		for _, line := range slices.Concat(Wrap(verdictLegend, width, ""), Wrap(verdictByDesign, width, ""), Wrap(verdictBeyond, width, "")) {
			w.WriteString(line + "\n")
		}
	}
	for _, b := range v.Blocks {
		w.WriteString("\n")
		writeVerdictBlock(w, b, width)
	}
	if len(v.RetryOnly) > 0 {
		if len(v.Blocks) > 0 {
			w.WriteString("\n")
		}
		for _, line := range Wrap("Clients retrying, no promise to judge: "+strings.Join(v.RetryOnly, ", ")+".", width, "") {
			w.WriteString(line + "\n")
		}
	}
	w.WriteString("\n")
	for _, f := range v.Findings {
		for _, line := range Wrap(f.Scenario+": "+f.Text, width, "  ") {
			w.WriteString(line + "\n")
		}
	}
}

// verdictColumn is one algorithm's column of a text matrix, laid out.
type verdictColumn struct {
	header           []string // lines, bottom-aligned
	ratioWidth, cost int      // widths of the two figures of a cell
	width            int      // the column's width
}

func writeVerdictBlock(w *strings.Builder, b VerdictBlock, width int) {
	nameWidth := DisplayWidth("scenario")
	for _, g := range b.Groups {
		for _, r := range g.Rows {
			nameWidth = max(nameWidth, DisplayWidth(r.Scenario))
		}
	}
	cols := make([]verdictColumn, len(b.Algorithms))
	for i, alg := range b.Algorithms {
		c := &cols[i]
		for _, g := range b.Groups {
			for _, r := range g.Rows {
				cell := r.Cells[i]
				c.ratioWidth = max(c.ratioWidth, max(DisplayWidth(BrokeMark), DisplayWidth(ByDesignMark))+len(cell.Ratio()))
				c.cost = max(c.cost, DisplayWidth(cell.Cost))
			}
		}
		cellWidth := c.ratioWidth
		if c.cost > 0 {
			cellWidth += 1 + c.cost
		}
		c.header = wrapAtHyphens(alg, max(cellWidth, 6))
		c.width = cellWidth
		for _, h := range c.header {
			c.width = max(c.width, DisplayWidth(h))
		}
	}
	const gap = 2
	// Split the algorithms into parts that fit beside the scenario column.
	var parts [][]int
	used := nameWidth
	for i, c := range cols {
		if len(parts) == 0 || used+gap+c.width > width && len(parts[len(parts)-1]) > 0 {
			parts = append(parts, nil)
			used = nameWidth
		}
		parts[len(parts)-1] = append(parts[len(parts)-1], i)
		used += gap + c.width
	}
	for p, part := range parts {
		if p > 0 {
			w.WriteString("\n")
		}
		lines := 0
		total := nameWidth
		for _, i := range part {
			lines = max(lines, len(cols[i].header))
			total += gap + cols[i].width
		}
		for l := range lines {
			head := ""
			if l == lines-1 {
				head = "scenario"
			}
			line := padRight(head, nameWidth)
			for _, i := range part {
				c := cols[i]
				text := ""
				if k := l - (lines - len(c.header)); k >= 0 {
					text = c.header[k]
				}
				line += strings.Repeat(" ", gap) + center(text, c.width)
			}
			w.WriteString(strings.TrimRight(line, " ") + "\n")
		}
		for _, g := range b.Groups {
			// A part of a split matrix leaves out the scenarios that ran none of its
			// algorithms.
			rows := slices.DeleteFunc(slices.Clone(g.Rows), func(r VerdictRow) bool {
				return len(parts) > 1 && !slices.ContainsFunc(part, func(i int) bool { return r.Cells[i].Ran })
			})
			if len(rows) == 0 {
				continue
			}
			rule := Wrap("── "+g.Label(), max(width, 20), "   ")
			last := len(rule) - 1
			if pad := total - DisplayWidth(rule[last]) - 1; pad > 0 {
				rule[last] += " " + strings.Repeat("─", pad)
			}
			w.WriteString(strings.Join(rule, "\n") + "\n")
			for _, r := range rows {
				line := padRight(r.Scenario, nameWidth)
				for _, i := range part {
					c, cell := cols[i], r.Cells[i]
					ratio := cell.Mark() + cell.Ratio()
					text := padLeft(ratio, c.ratioWidth)
					switch {
					case c.cost == 0:
					case cell.Ran:
						text += " " + padLeft(cell.Cost, c.cost)
					default:
						text += strings.Repeat(" ", 1+c.cost)
					}
					line += strings.Repeat(" ", gap) + padLeft(text, c.width)
				}
				w.WriteString(strings.TrimRight(line, " ") + "\n")
			}
		}
	}
}

// wrapAtHyphens breaks an algorithm's name after hyphens into lines of at most width
// columns where it can ("sliding-window" → "sliding-", "window").
func wrapAtHyphens(name string, width int) []string {
	if DisplayWidth(name) <= width {
		return []string{name}
	}
	var pieces []string
	rest := name
	for {
		i := strings.Index(rest, "-")
		if i < 0 {
			pieces = append(pieces, rest)
			break
		}
		pieces = append(pieces, rest[:i+1])
		rest = rest[i+1:]
	}
	var lines []string
	line := ""
	for _, p := range pieces {
		if line != "" && DisplayWidth(line+p) > width {
			lines = append(lines, line)
			line = ""
		}
		line += p
	}
	return append(lines, line)
}

func padRight(s string, width int) string {
	return s + strings.Repeat(" ", max(width-DisplayWidth(s), 0))
}

func padLeft(s string, width int) string {
	return strings.Repeat(" ", max(width-DisplayWidth(s), 0)) + s
}

func center(s string, width int) string {
	pad := max(width-DisplayWidth(s), 0)
	return strings.Repeat(" ", pad-pad/2) + s + strings.Repeat(" ", pad/2)
}

// WriteVerdictMarkdown writes the verdict as Markdown: a table per group, then the
// findings as a list.
func WriteVerdictMarkdown(out io.Writer, v Verdict) error {
	var b strings.Builder
	writeVerdictMarkdown(&b, v)
	_, err := io.WriteString(out, b.String())
	return err
}

func writeVerdictMarkdown(w *strings.Builder, v Verdict) {
	w.WriteString("## Verdict\n")
	if len(v.Blocks) > 0 {
		w.WriteString("\n" + verdictQuestion + " " + verdictLegend + " " + verdictByDesign + " " + verdictBeyond + "\n")
	}
	for _, b := range v.Blocks {
		for _, g := range b.Groups {
			fmt.Fprintf(w, "\n**%s**\n\n| scenario |", g.Label())
			for _, a := range b.Algorithms {
				fmt.Fprintf(w, " %s |", a)
			}
			w.WriteString("\n|---|" + strings.Repeat("---:|", len(b.Algorithms)) + "\n")
			for _, r := range g.Rows {
				fmt.Fprintf(w, "| %s |", r.Scenario)
				for _, c := range r.Cells {
					text := c.Ratio()
					if c.Broke {
						text = "**" + c.Mark() + text + "**"
					}
					if c.Ran && c.Cost != "" {
						text += " " + c.Cost
					}
					fmt.Fprintf(w, " %s |", text)
				}
				w.WriteString("\n")
			}
		}
	}
	if len(v.RetryOnly) > 0 {
		fmt.Fprintf(w, "\nClients retrying, no promise to judge: %s.\n", strings.Join(v.RetryOnly, ", "))
	}
	w.WriteString("\n")
	for _, f := range v.Findings {
		fmt.Fprintf(w, "- **%s**: %s\n", f.Scenario, f.Text)
	}
}

// Deref is *v, or 0 for nil: an optional rate where a figure is drawn or ranked.
func Deref(v *float64) float64 {
	if v == nil {
		return 0
	}
	return *v
}
