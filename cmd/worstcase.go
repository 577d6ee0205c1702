package cmd

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/scenario"
	"github.com/rlsim/rlsim/worstcase"
	"github.com/rlsim/rlsim/worstcase/chart"
)

// defaultSpans are the window lengths of the worst-case curve, in windows W.
var defaultSpans = []float64{0.125, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 4}

// scheduleLinesShown is how many lines of each schedule the human output prints.
const scheduleLinesShown = 8

type worstCaseOptions struct {
	*globalOptions
	algorithms  []string
	limit       int64
	window      time.Duration
	burst       int64
	budget      int
	spans       []float64
	scheduleOut string
}

func newWorstCaseCmd(g *globalOptions, streams IO) *cobra.Command {
	o := &worstCaseOptions{globalOptions: g}
	c := &cobra.Command{
		Use:   "worst-case",
		Short: "Find the traffic that gets the most through each algorithm in one window",
		Long: `worst-case attacks one key with structured schedules (bursts around window edges,
bursts timed against the two-counter estimate's weight, drips at the refill rate after a
full burst, ...) and a seeded local search over arrival times and counts, running the
real limiter on every candidate. It prints, per algorithm, the analytic bound with its
source, the most the engine admitted in one trailing window, and the schedule that did it
(--schedule-out writes each as a scenario file that rlsim run replays exactly), and the
curve of the most admitted in any window of length T against T (--charts png,svg).`,
		Example: `  # every algorithm at 100 per minute; the curve as out/worst-case.svg
  rlsim worst-case

  # two algorithms at 10 per second, a longer search, the curve as PNG
  rlsim worst-case --algorithms token-bucket,gcra --limit 10 --window 1s --budget 1000 --charts png

  # write the worst schedules as scenario files and replay one
  rlsim worst-case --algorithms sliding-window --schedule-out worst
  rlsim run worst/worst-sliding-window.yaml`,
		Args: argCount(0, 0),
		RunE: func(*cobra.Command, []string) error {
			return runWorstCase(o, streams)
		},
	}
	f := c.Flags()
	f.StringSliceVar(&o.algorithms, "algorithms", nil, "algorithms to attack, comma-separated (default: all)")
	f.Int64Var(&o.limit, "limit", 100, "the policy's limit, units per window")
	f.DurationVar(&o.window, "window", time.Minute, "the policy's window")
	f.Int64Var(&o.burst, "burst", 0, "the bucket algorithms' burst (default: the limit)")
	f.IntVar(&o.budget, "budget", 300, "local-search candidates per algorithm after the structured attacks (0: structured only; the curve uses a quarter per window length)")
	f.Float64SliceVar(&o.spans, "spans", defaultSpans, "window lengths T of the curve, in windows W")
	f.StringVar(&o.scheduleOut, "schedule-out", "", "write each algorithm's worst schedule as a scenario file worst-ALGORITHM.yaml into this folder")
	g.addFormatFlag(c, allFormats...)
	g.addOutFlags(c)
	g.addSeedFlag(c)
	return c
}

func (o *worstCaseOptions) validate() error {
	for _, a := range o.algorithms {
		if !slices.Contains(algorithms.Names, a) {
			return usagef("--algorithms: unknown algorithm %q (want %s)", a, strings.Join(algorithms.Names, ", "))
		}
	}
	if o.limit <= 0 || o.limit > maxWorstCaseUnits {
		return usagef("--limit: must be between 1 and %d (each candidate replays a few times that many requests), got %d", maxWorstCaseUnits, o.limit)
	}
	if o.window <= 0 {
		return usagef("--window: must be positive, got %s", o.window)
	}
	if o.burst < 0 || o.burst > maxWorstCaseUnits {
		return usagef("--burst: must be between 0 and %d, got %d", maxWorstCaseUnits, o.burst)
	}
	if o.budget < 0 {
		return usagef("--budget: must not be negative, got %d", o.budget)
	}
	if len(o.spans) == 0 {
		return usagef("--spans: needs at least one window length")
	}
	for _, s := range o.spans {
		if !(s > 0) || s > 1000 || time.Duration(s*float64(o.window)) <= 0 {
			return usagef("--spans: %g is not a positive number of windows (at most 1000, at least a nanosecond)", s)
		}
		// Attacks reach a few windows past T; keep every offset, added to the epoch's
		// Unix nanoseconds, inside int64.
		if (s+4)*float64(o.window) > 1<<61 {
			return usagef("--spans: %g windows of %s reach past what the virtual clock counts (about 73 years)", s, o.window)
		}
	}
	if _, err := chartFormats(o.charts); err != nil {
		return err
	}
	return nil
}

// chartFormats reads --charts: "none" or a comma-separated list of png and svg.
func chartFormats(s string) ([]string, error) {
	if s == "none" || s == "" {
		return nil, nil
	}
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f != "png" && f != "svg" {
			return nil, usagef("--charts: unknown chart format %q (want png, svg or none)", f)
		}
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out, nil
}

// worstCaseRun is one algorithm's findings: the search at T = W, and the curve over T.
type worstCaseRun struct {
	worst worstcase.Result
	curve []worstcase.Result
}

func runWorstCase(o *worstCaseOptions, streams IO) error {
	if err := o.validate(); err != nil {
		return err
	}
	formats, _ := chartFormats(o.charts)
	algs := o.algorithms
	if len(algs) == 0 {
		algs = algorithms.Names
	}
	seed := uint64(scenario.DefaultSeed)
	if o.seedSet {
		seed = o.seed
	}
	pol := algorithms.Policy{Limit: o.limit, Window: o.window, Burst: o.burst}
	epoch := scenario.DefaultEpoch
	rng := scenario.NewRNG(seed)

	spans := make([]time.Duration, len(o.spans))
	for i, s := range o.spans {
		spans[i] = time.Duration(s * float64(o.window))
	}
	slices.Sort(spans)
	spans = slices.Compact(spans)

	runs := make([]worstCaseRun, 0, len(algs))
	for _, a := range algs {
		run, err := searchWorstCase(worstcase.Target{Algorithm: a, Policy: pol, Epoch: epoch.UnixNano(), T: pol.Window}, o.budget, spans, rng)
		if err != nil {
			return err
		}
		runs = append(runs, run)
	}

	// Render everything before writing anything, so a failure leaves no file behind.
	var buf bytes.Buffer
	if err := renderWorstCase(&buf, o.format, runs, seed, o.budget); err != nil {
		return err
	}
	charts := make([][]byte, len(formats))
	for i, f := range formats {
		var b bytes.Buffer
		if err := worstCaseChart(runs, pol).Write(&b, f); err != nil {
			return fmt.Errorf("chart: %w", err)
		}
		charts[i] = b.Bytes()
	}
	var outs outputSet
	defer outs.discard()
	if o.scheduleOut != "" {
		if err := os.MkdirAll(o.scheduleOut, 0o755); err != nil {
			return fmt.Errorf("--schedule-out: %w", err)
		}
		for _, r := range runs {
			path := filepath.Join(o.scheduleOut, worstcase.ScenarioName(r.worst.Target.Algorithm)+".yaml")
			if err := outs.add(path, r.worst.ScenarioYAML(epoch)); err != nil {
				return err
			}
		}
	}
	if len(formats) > 0 && o.out != "" { // --out "" writes no files, as on compare
		if err := os.MkdirAll(o.out, 0o755); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
		for i, f := range formats {
			if err := outs.add(filepath.Join(o.out, "worst-case."+f), charts[i]); err != nil {
				return err
			}
		}
	}
	return commitWithStdout(&outs, streams.Out, buf.Bytes())
}

// searchWorstCase runs the full-budget search at T = W and a quarter-budget search at
// every other span of the curve, all from rng in a fixed order.
func searchWorstCase(t worstcase.Target, budget int, spans []time.Duration, rng *rand.Rand) (worstCaseRun, error) {
	worst, err := worstcase.Search(t, budget, rng)
	if err != nil {
		return worstCaseRun{}, err
	}
	run := worstCaseRun{worst: worst}
	for _, T := range spans {
		if T == t.Policy.Window {
			run.curve = append(run.curve, worst)
			continue
		}
		at := t
		at.T = T
		r, err := worstcase.Search(at, budget/4, rng)
		if err != nil {
			return worstCaseRun{}, err
		}
		run.curve = append(run.curve, r)
	}
	return run, nil
}

func worstCaseChart(runs []worstCaseRun, pol algorithms.Policy) chart.Curves {
	c := chart.Curves{
		Title:  fmt.Sprintf("Most admitted in any window of length T — one key, %d per %s, burst %d", pol.Limit, pol.Window, pol.EffectiveBurst()),
		Limit:  float64(pol.Limit),
		Window: pol.Window,
	}
	for _, r := range runs {
		s := chart.Series{Name: r.worst.Target.Algorithm}
		for _, p := range r.curve {
			s.Points = append(s.Points, chart.Point{T: p.Target.T, Admitted: float64(p.Worst.Peak)})
		}
		c.Series = append(c.Series, s)
	}
	return c
}

// worstCaseJSON is the JSON object of rlsim worst-case.
type worstCaseJSON struct {
	Seed    uint64            `json:"seed"`
	Budget  int               `json:"budget"`
	Policy  report.Policy     `json:"policy"`
	Window  report.Duration   `json:"window"`
	Results []worstResultJSON `json:"results"`
}

type worstResultJSON struct {
	Algorithm           string             `json:"algorithm"`
	AnalyticBound       float64            `json:"analytic_bound"`
	BoundFormula        string             `json:"bound_formula"`
	BoundSource         string             `json:"bound_source"`
	BoundReached        bool               `json:"bound_reached"`
	WorstWindowAdmitted int64              `json:"worst_window_admitted"`
	WorstOverAdmission  float64            `json:"worst_over_admission"`
	PeakWindowEnd       report.Duration    `json:"peak_window_end"`
	FoundBy             string             `json:"found_by"`
	Structured          int                `json:"structured"`
	Searched            int                `json:"searched"`
	Schedule            []scheduleLineJSON `json:"schedule"`
	Curve               []curvePointJSON   `json:"curve"`
}

type scheduleLineJSON struct {
	At    report.Duration `json:"at"`
	Count int64           `json:"count"`
}

type curvePointJSON struct {
	T                   report.Duration `json:"t"`
	AnalyticBound       float64         `json:"analytic_bound"`
	WorstWindowAdmitted int64           `json:"worst_window_admitted"`
	FoundBy             string          `json:"found_by"`
}

func renderWorstCase(w io.Writer, format string, runs []worstCaseRun, seed uint64, budget int) error {
	switch format {
	case "json":
		return report.WriteJSON(w, worstCaseDocument(runs, seed, budget))
	case "csv":
		return report.WriteTableCSV(w, worstCaseCurveTable(runs, seed, true))
	}
	tables := []report.Table{worstCaseSummary(runs, seed, budget)}
	for _, r := range runs {
		tables = append(tables, scheduleTable(r.worst))
	}
	tables = append(tables, worstCaseCurveTable(runs, seed, false))
	return writeTables(w, format, tables)
}

func worstCaseDocument(runs []worstCaseRun, seed uint64, budget int) worstCaseJSON {
	doc := worstCaseJSON{Seed: seed, Budget: budget}
	for i, r := range runs {
		x := r.worst
		if i == 0 {
			p := x.Target.Policy
			doc.Policy = report.Policy{Limit: p.Limit, Window: report.Duration(p.Window), Burst: p.EffectiveBurst()}
			doc.Window = report.Duration(p.Window)
		}
		j := worstResultJSON{
			Algorithm:     x.Target.Algorithm,
			AnalyticBound: x.Bound.Value, BoundFormula: x.Bound.Formula, BoundSource: x.Bound.Source, BoundReached: x.Bound.Reached,
			WorstWindowAdmitted: x.Worst.Peak,
			WorstOverAdmission:  x.OverAdmission(),
			PeakWindowEnd:       report.Duration(x.Worst.PeakEnd),
			FoundBy:             x.FoundBy,
			Structured:          x.Structured,
			Searched:            x.Searched,
			Schedule:            []scheduleLineJSON{},
		}
		for _, b := range x.Schedule {
			j.Schedule = append(j.Schedule, scheduleLineJSON{At: report.Duration(b.At), Count: b.Count})
		}
		for _, p := range r.curve {
			j.Curve = append(j.Curve, curvePointJSON{T: report.Duration(p.Target.T), AnalyticBound: p.Bound.Value, WorstWindowAdmitted: p.Worst.Peak, FoundBy: p.FoundBy})
		}
		doc.Results = append(doc.Results, j)
	}
	return doc
}

func worstCaseSummary(runs []worstCaseRun, seed uint64, budget int) report.Table {
	t := report.Table{
		Header: []string{"algorithm", "analytic_bound", "formula", "worst_window_admitted", "worst_over_admission", "found_by", "evaluations"},
	}
	for i, r := range runs {
		x := r.worst
		if i == 0 {
			p := x.Target.Policy
			t.Title = fmt.Sprintf("worst case for one key — limit %d per %s, burst %d, most admitted in one window of %s, budget %d, seed %d",
				p.Limit, p.Window, p.EffectiveBurst(), p.Window, budget, seed)
		}
		bound := formatFloat(x.Bound.Value)
		if !x.Bound.Reached {
			bound = "<" + bound
		}
		t.Rows = append(t.Rows, []string{
			x.Target.Algorithm, bound, x.Bound.Formula,
			strconv.FormatInt(x.Worst.Peak, 10), strconv.FormatFloat(x.OverAdmission(), 'f', 2, 64),
			x.FoundBy, fmt.Sprintf("%d+%d", x.Structured, x.Searched),
		})
		t.Notes = append(t.Notes, fmt.Sprintf("%s: %s.", x.Target.Algorithm, x.Bound.Source))
	}
	t.Notes = append(t.Notes, "evaluations: structured attacks + local-search candidates, each run through the real limiter; \"<\" marks a bound approached but never reached.")
	return t
}

func scheduleTable(x worstcase.Result) report.Table {
	t := report.Table{
		Title:  fmt.Sprintf("schedule for %s: %d requests, %d admitted, %d in the window ending at %s", x.Target.Algorithm, x.Worst.Requests, x.Worst.Admitted, x.Worst.Peak, x.Worst.PeakEnd),
		Header: []string{"at", "count", "spread"},
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

// worstCaseCurveTable is the curve: for CSV one raw row per algorithm and window length,
// for people one row per window length with a column per algorithm.
func worstCaseCurveTable(runs []worstCaseRun, seed uint64, raw bool) report.Table {
	if raw {
		t := report.Table{Header: []string{"algorithm", "seed", "limit", "window", "burst", "t", "t_over_window", "analytic_bound", "worst_window_admitted", "worst_over_admission", "found_by"}}
		for _, r := range runs {
			for _, p := range r.curve {
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
	t := report.Table{
		Title:  "most admitted in any window of length T: found (analytic bound)",
		Header: []string{"T", "T/W"},
	}
	if len(runs) == 0 {
		return t
	}
	for _, r := range runs {
		t.Header = append(t.Header, r.worst.Target.Algorithm)
	}
	for i := range runs[0].curve {
		p0 := runs[0].curve[i]
		row := []string{p0.Target.T.String(), strconv.FormatFloat(float64(p0.Target.T)/float64(p0.Target.Policy.Window), 'g', 4, 64)}
		for _, r := range runs {
			p := r.curve[i]
			row = append(row, fmt.Sprintf("%d (%s)", p.Worst.Peak, formatFloat(p.Bound.Value)))
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

func formatFloat(v float64) string {
	return strings.TrimSuffix(strings.TrimRight(strconv.FormatFloat(v, 'f', 2, 64), "0"), ".")
}

// worstCaseCache holds compare's worst_over_admission per algorithm, policy, epoch, budget
// and seed, so that scenarios sharing a policy search it once.
var worstCaseCache sync.Map // worstCaseKey -> float64

type worstCaseKey struct {
	target worstcase.Target
	budget int
	seed   uint64
}

// worstOverAdmission is the worst over_admission the search finds for t at T = W with
// this budget and seed, from the cache when it was found before.
func worstOverAdmission(t worstcase.Target, budget int, seed uint64) (float64, error) {
	k := worstCaseKey{target: t, budget: budget, seed: seed}
	if v, ok := worstCaseCache.Load(k); ok {
		return v.(float64), nil
	}
	r, err := worstcase.Search(t, budget, scenario.NewRNG(seed))
	if err != nil {
		return 0, err
	}
	v := r.OverAdmission()
	worstCaseCache.Store(k, v)
	return v, nil
}

// defaultCompareWorstBudget keeps `rlsim compare` quick: the structured attacks already
// reach the bound for every algorithm at T = W, and the search only confirms it.
const defaultCompareWorstBudget = 40

// compareWorstMaxUnits is the largest limit or burst for which compare searches the worst
// case: every candidate replays a few times max(limit, burst) requests, so beyond this the
// column would cost seconds per algorithm (rlsim worst-case takes them on purpose).
const compareWorstMaxUnits = 20000

// maxWorstCaseUnits bounds rlsim worst-case's --limit and --burst for the same reason:
// at 200000 a search takes tens of seconds per algorithm.
const maxWorstCaseUnits = 200000

// addWorstOverAdmission fills worst_over_admission in every result of rep for the run's
// policy, seed and epoch, and leaves it null when the policy is beyond
// compareWorstMaxUnits.
func addWorstOverAdmission(rep *report.Report, epoch time.Time, budget int) error {
	pol := algorithms.Policy{Limit: rep.Policy.Limit, Window: time.Duration(rep.Policy.Window), Burst: rep.Policy.Burst}
	if max(pol.Limit, pol.EffectiveBurst()) > compareWorstMaxUnits {
		return nil
	}
	for i := range rep.Results {
		r := &rep.Results[i]
		if r.Distributed != nil {
			// A fleet's worst case is not its algorithm's: routing, leases and outages
			// change it, and the search runs one limiter. Leave the column empty.
			continue
		}
		t := worstcase.Target{Algorithm: r.Algorithm, Policy: pol, Epoch: epoch.UnixNano(), T: pol.Window}
		v, err := worstOverAdmission(t, budget, rep.Seed)
		if err != nil {
			return fmt.Errorf("scenario %s: worst case of %s: %w", rep.Scenario, r.Algorithm, err)
		}
		r.WorstOverAdmission = &v
	}
	return nil
}
