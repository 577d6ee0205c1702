package worstcase

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rlsim/rlsim/report"
)

// Report is the output of `rlsim worst-case`, the value --format json writes: the run's seed and budget, the
// policy, and per algorithm the analytic bound, what the search found at T = W and the
// schedule that did it, and the curve over window lengths T. The names are a contract.
type Report struct {
	Seed    uint64          `json:"seed"`
	Budget  int             `json:"budget"`
	Policy  report.Policy   `json:"policy"`
	Window  report.Duration `json:"window"`
	Results []ReportResult  `json:"results"`
}

// ReportResult is one algorithm's findings.
type ReportResult struct {
	Algorithm           string  `json:"algorithm"`
	AnalyticBound       float64 `json:"analytic_bound"`
	BoundFormula        string  `json:"bound_formula"`
	BoundSource         string  `json:"bound_source"`
	BoundReached        bool    `json:"bound_reached"`
	WorstWindowAdmitted int64   `json:"worst_window_admitted"`
	WorstOverAdmission  float64 `json:"worst_over_admission"`
	// PeakWindowEnd is the end of the window that held the most, from t=0.
	PeakWindowEnd report.Duration `json:"peak_window_end"`
	FoundBy       string          `json:"found_by"`
	// Structured and Searched count the candidates run through the limiter: the
	// structured attacks and the local search's.
	Structured int                `json:"structured"`
	Searched   int                `json:"searched"`
	Schedule   []ReportBurst      `json:"schedule"`
	Curve      []ReportCurvePoint `json:"curve"`
}

// ReportBurst is one line of a schedule: Count requests at At from t=0.
type ReportBurst struct {
	At    report.Duration `json:"at"`
	Count int64           `json:"count"`
}

// ReportCurvePoint is the worst found in windows of length T.
type ReportCurvePoint struct {
	T                   report.Duration `json:"t"`
	AnalyticBound       float64         `json:"analytic_bound"`
	WorstWindowAdmitted int64           `json:"worst_window_admitted"`
	FoundBy             string          `json:"found_by"`
}

// NewReport is the output of a run's findings, one per algorithm in the order run.
func NewReport(findings []Findings, seed uint64, budget int) Report {
	doc := Report{Seed: seed, Budget: budget}
	for i, f := range findings {
		x := f.Worst
		if i == 0 {
			p := x.Target.Policy
			doc.Policy = report.Policy{Limit: p.Limit, Window: report.Duration(p.Window), Burst: p.EffectiveBurst()}
			doc.Window = report.Duration(p.Window)
		}
		r := ReportResult{
			Algorithm:     x.Target.Algorithm,
			AnalyticBound: x.Bound.Value, BoundFormula: x.Bound.Formula, BoundSource: x.Bound.Source, BoundReached: x.Bound.Reached,
			WorstWindowAdmitted: x.Worst.Peak,
			WorstOverAdmission:  x.OverAdmission(),
			PeakWindowEnd:       report.Duration(x.Worst.PeakEnd),
			FoundBy:             x.FoundBy,
			Structured:          x.Structured,
			Searched:            x.Searched,
			Schedule:            []ReportBurst{},
		}
		for _, b := range x.Schedule {
			r.Schedule = append(r.Schedule, ReportBurst{At: report.Duration(b.At), Count: b.Count})
		}
		for _, p := range f.Curve {
			r.Curve = append(r.Curve, ReportCurvePoint{T: report.Duration(p.Target.T), AnalyticBound: p.Bound.Value, WorstWindowAdmitted: p.Worst.Peak, FoundBy: p.FoundBy})
		}
		doc.Results = append(doc.Results, r)
	}
	return doc
}

// scheduleLinesShown is how many lines of each schedule the human output prints.
const scheduleLinesShown = 8

// tableWidth is the display width the human worst-case output keeps to: the tables
// split, and titles and notes wrap, to fit it. --format json and csv carry every column.
const tableWidth = 100

// Tables are the human tables of a run's findings: the summary, each algorithm's worst
// schedule, and the curve over window lengths.
func Tables(runs []Findings, seed uint64, budget int) []report.Table {
	tables := []report.Table{SummaryTable(runs, seed, budget)}
	for _, r := range runs {
		tables = append(tables, ScheduleTable(r.Worst))
	}
	return append(tables, CurveTable(runs))
}

// WorstPossible is the figure the summary prints as the worst possible for one result, and
// whether it is proven: a known analytic bound ("<" when approached but never reached),
// unless the engine measured more than it; otherwise what the engine measured, which no
// traffic of one key can do less than (a lower bound, found by the search).
func WorstPossible(x Result) (figure, ratio string, proven bool) {
	l := float64(x.Target.Policy.Limit)
	if x.Known && x.Bound.Value >= float64(x.Worst.Peak) {
		mark := ""
		if !x.Bound.Reached {
			mark = "<"
		}
		return mark + formatFloat(x.Bound.Value), mark + strconv.FormatFloat(x.Bound.Value/l, 'f', 2, 64), true
	}
	return strconv.FormatInt(x.Worst.Peak, 10), strconv.FormatFloat(x.OverAdmission(), 'f', 2, 64), false
}

// SummaryTable is one row per algorithm with the essential columns: the worst
// possible, over the limit, whether it is proven or found, and what the engine observed.
// The formula, the source, the attack that found it and the evaluations are in the notes
// and the schedule tables (and every one in --format json).
func SummaryTable(runs []Findings, seed uint64, budget int) report.Table {
	t := report.Table{
		Header: []string{"algorithm", "worst\npossible", "×\nlimit", "bound", "observed"},
		Width:  tableWidth,
	}
	structured, searched := 0, 0
	for i, r := range runs {
		x := r.Worst
		if i == 0 {
			p := x.Target.Policy
			t.Title = fmt.Sprintf("worst case for one key — limit %d per %s, burst %d, in one window of %s; budget %d, seed %d",
				p.Limit, p.Window, p.EffectiveBurst(), p.Window, budget, seed)
		}
		figure, ratio, proven := WorstPossible(x)
		kind := "found"
		if proven {
			kind = "proven"
		}
		t.Rows = append(t.Rows, []string{x.Target.Algorithm, figure, ratio, kind, strconv.FormatInt(x.Worst.Peak, 10)})
		switch {
		case proven:
			t.Notes = append(t.Notes, fmt.Sprintf("%s: %s — %s.", x.Target.Algorithm, x.Bound.Formula, x.Bound.Source))
		case x.Known:
			t.Notes = append(t.Notes, fmt.Sprintf("%s: the engine measured %d, above the analytic bound %s = %s: the bound does not hold for this limiter.",
				x.Target.Algorithm, x.Worst.Peak, x.Bound.Formula, formatFloat(x.Bound.Value)))
		default:
			t.Notes = append(t.Notes, fmt.Sprintf("%s: no analytic bound is known for a limiter rlsim does not ship; the worst possible is the most the search found.", x.Target.Algorithm))
		}
		structured, searched = structured+x.Structured, searched+x.Searched
	}
	t.Notes = append(t.Notes,
		"observed: the most the engine admitted in one window over the schedules it ran through the real limiter, a lower bound on the worst possible; proven: an analytic bound (\"<\" approached, never reached); found: the search's figure, which equals observed.",
		fmt.Sprintf("evaluations: %d structured attacks and %d local-search candidates in all (per algorithm in --format json).", structured, searched))
	return t
}

// ScheduleTable is the first lines of the schedule that got the most through x's
// algorithm; --schedule-out writes the whole of it.
func ScheduleTable(x Result) report.Table {
	t := report.Table{
		Title: fmt.Sprintf("schedule for %s, found by %s: %d requests, %d admitted, %d in the window ending at %s",
			x.Target.Algorithm, x.FoundBy, x.Worst.Requests, x.Worst.Admitted, x.Worst.Peak, x.Worst.PeakEnd),
		Header: []string{"at", "count", "spread"},
		Width:  tableWidth,
	}
	lines := x.Schedule.Lines()
	for i, l := range lines {
		if i == scheduleLinesShown && len(lines) > scheduleLinesShown+1 {
			t.Notes = append(t.Notes, fmt.Sprintf("… and %d more lines; --schedule-out writes the whole schedule as a scenario file.", len(lines)-i))
			break
		}
		t.Rows = append(t.Rows, []string{l.At.String(), strconv.FormatInt(l.Count, 10), l.Spread.String()})
	}
	return t
}

// CurveRows is the curve as `rlsim worst-case --format csv` writes it: one raw row per
// algorithm and window length.
func CurveRows(runs []Findings, seed uint64) report.Table {
	t := report.Table{Header: []string{"algorithm", "seed", "limit", "window", "burst", "t", "t_over_window", "analytic_bound", "worst_window_admitted", "worst_over_admission", "found_by"}}
	for _, r := range runs {
		for _, p := range r.Curve {
			pol := p.Target.Policy
			t.Rows = append(t.Rows, []string{
				p.Target.Algorithm, strconv.FormatUint(seed, 10), strconv.FormatInt(pol.Limit, 10), pol.Window.String(), strconv.FormatInt(pol.EffectiveBurst(), 10),
				p.Target.T.String(), strconv.FormatFloat(float64(p.Target.T)/float64(pol.Window), 'g', -1, 64),
				strconv.FormatFloat(p.Bound.Value, 'g', -1, 64), strconv.FormatInt(p.Worst.Peak, 10),
				strconv.FormatFloat(p.OverAdmission(), 'g', -1, 64), p.FoundBy,
			})
		}
	}
	return t
}

// CurveTable is the curve as people read it: one row per window length with a column per
// algorithm, the most found and (in brackets) the analytic bound; it splits into several
// tables when the algorithms do not fit the width.
func CurveTable(runs []Findings) report.Table {
	t := report.Table{
		Title:  "most admitted in any window of length T: found (analytic bound)",
		Header: []string{"T", "T/W"},
		Width:  tableWidth,
		Keys:   2, // a table split to fit the width repeats T and T/W
	}
	if len(runs) == 0 {
		return t
	}
	for _, r := range runs {
		t.Header = append(t.Header, r.Worst.Target.Algorithm)
	}
	for i := range runs[0].Curve {
		p0 := runs[0].Curve[i]
		row := []string{p0.Target.T.String(), strconv.FormatFloat(float64(p0.Target.T)/float64(p0.Target.Policy.Window), 'g', 4, 64)}
		for _, r := range runs {
			p := r.Curve[i]
			bound := formatFloat(p.Bound.Value)
			if !p.Known {
				bound = "—"
			}
			row = append(row, fmt.Sprintf("%d (%s)", p.Worst.Peak, bound))
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// formatFloat prints v with at most two decimals and no trailing zeros: 40, 40.5, 40.25.
func formatFloat(v float64) string {
	return strings.TrimSuffix(strings.TrimRight(strconv.FormatFloat(v, 'f', 2, 64), "0"), ".")
}
