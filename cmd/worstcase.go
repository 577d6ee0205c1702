package cmd

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/render/chart"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/scenario"
	"github.com/rlsim/rlsim/sim"
	"github.com/rlsim/rlsim/worstcase"
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
	own         ownOptions
	imp         importFlags
	redis       string
	// storeTimeout bounds each round trip to the store the --lua scripts run on.
	storeTimeout time.Duration
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
  rlsim run worst/worst-sliding-window.yaml

  # the worst case of your own Lua script beside the built-in fixed window, structured attacks only
  rlsim worst-case --algorithms fixed-window --lua examples/lua/incr_expire.lua --limit 10 --window 10s --budget 0 --spans 1`,
		Args: argCount(0, 0),
		RunE: func(cc *cobra.Command, _ []string) error {
			return runWorstCase(cc.Context(), o, streams)
		},
	}
	f := c.Flags()
	addAlgorithmsFlag(c, &o.algorithms, "algorithms to attack (default: the six)", nil)
	o.limit, o.window = 100, time.Minute
	f.Var(unitsValue{&o.limit}, "limit", "the policy's limit, units per window")
	f.Var(windowValue{&o.window}, "window", "the policy's window")
	f.Var(unitsValue{&o.burst}, "burst", "the bucket algorithms' burst (default: the limit)")
	f.IntVar(&o.budget, "budget", 300, "local-search candidates per algorithm after the structured attacks (0: structured only; the curve uses a quarter per window length)")
	f.Float64SliceVar(&o.spans, "spans", defaultSpans, "window lengths T of the curve, in windows W")
	f.Lookup("spans").DefValue = formatSpans(defaultSpans)
	f.StringVar(&o.scheduleOut, "schedule-out", "", "write each algorithm's worst schedule as a scenario file worst-ALGORITHM.yaml into this folder")
	o.imp.add(c, "also attack the rate limits of a gateway's configuration (nginx.conf, haproxy.cfg, Envoy, Kong, Traefik; see rlsim import)")
	addOwnFlags(c, &o.own)
	addOwnRedisFlag(c, &o.redis, &o.storeTimeout)
	g.addFormatFlag(c, allFormats...)
	g.addOutFlags(c)
	g.addSeedFlag(c)
	return c
}

func (o *worstCaseOptions) validate() error {
	if err := o.imp.check(); err != nil {
		return err
	}
	if o.limit <= 0 || o.limit > maxWorstCaseUnits {
		return usagef("--limit: must be between 1 and %d (each candidate replays a few times that many requests), got %d", maxWorstCaseUnits, o.limit)
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
	if o.redis != "" && len(o.own.lua) == 0 {
		return usagef("--redis: worst-case runs only --lua scripts on a Redis server, and none is given")
	}
	for _, s := range o.spans {
		if !(s > 0) || s > 1000 || time.Duration(s*float64(o.window)) <= 0 {
			return usagef("--spans: %g is not a positive number of windows (at most 1000, at least a nanosecond)", s)
		}
		if err := sim.CheckRun(scenario.DefaultEpoch, time.Duration(s*float64(o.window)), o.window); err != nil {
			return usagef("--spans: %g windows of %s: %v", s, o.window, err)
		}
	}
	return nil
}

func runWorstCase(ctx context.Context, o *worstCaseOptions, streams IO) error {
	if err := o.validate(); err != nil {
		return err
	}
	formats, err := parseCharts(o.charts)
	if err != nil {
		return err
	}
	imp, err := o.imp.load(streams.Err)
	if err != nil {
		return err
	}
	algs := o.algorithms
	if len(algs) == 0 {
		algs = algorithms.Defaults()
	}
	algs = withImported(algs, imp)
	seed := uint64(scenario.DefaultSeed)
	if o.seedSet {
		seed = o.seed
	}
	pol := algorithms.Policy{Limit: o.limit, Window: o.window, Burst: o.burst}
	epoch := scenario.DefaultEpoch
	rng := sim.NewRNG(seed, sim.RunStream)

	spans := make([]time.Duration, len(o.spans))
	for i, s := range o.spans {
		spans[i] = time.Duration(s * float64(o.window))
	}
	slices.Sort(spans)
	spans = slices.Compact(spans)

	// Ctrl-C ends the search between two runs of a limiter, with one line; the files are
	// written after the search, and a user's limiter is cleaned up once it has stopped.
	ctx, stop := interruptible(ctx)
	defer stop()
	so, stopWatch := watchStore(o.storeTimeout, streams.Err, nil)
	defer stopWatch()
	own, err := o.own.open(ctx, o.redis, so, streams)
	if err != nil {
		return err
	}
	defer own.close(streams)
	targets := make([]worstcase.Target, 0, len(algs))
	for _, a := range algs {
		targets = append(targets, worstcase.Target{Algorithm: a, Policy: pol, Epoch: epoch.UnixNano()})
	}
	targets = append(targets, own.targets(pol, epoch.UnixNano())...)
	runs := make([]worstcase.Findings, 0, len(targets))
	for _, t := range targets {
		run, err := worstcase.FindContext(ctx, t, o.budget, spans, rng)
		if ctx.Err() != nil {
			return interruption(ctx, context.Cause(ctx), own.cleaned())
		}
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
	var charts []outFile
	if o.out != "" { // --out "" writes no files, as on compare
		fig := worstCaseFigure(o, runs, pol, seed)
		for _, f := range formats {
			var b bytes.Buffer
			if err := fig.Render(&b, f); err != nil {
				return fmt.Errorf("chart %s: %w", fig.Name, err)
			}
			charts = append(charts, outFile{path: fig.Name + "." + f, data: b.Bytes()})
		}
	}
	var outs outputSet
	defer outs.discard()
	if o.scheduleOut != "" {
		if err := os.MkdirAll(o.scheduleOut, 0o755); err != nil {
			return fmt.Errorf("--schedule-out: %w", err)
		}
		for _, r := range runs {
			path := filepath.Join(o.scheduleOut, worstcase.ScenarioName(r.Worst.Target.Algorithm)+".yaml")
			if err := outs.add(path, r.Worst.ScenarioYAML(epoch)); err != nil {
				return err
			}
		}
	}
	if err := stageOutFiles(&outs, o.out, charts); err != nil {
		return err
	}
	return commitWithStdout(&outs, streams.Out, buf.Bytes())
}

// worstCaseFigure is the curve of every algorithm, in the house style, with a caption
// that names the seed and the command that draws it again.
func worstCaseFigure(o *worstCaseOptions, runs []worstcase.Findings, pol algorithms.Policy, seed uint64) *chart.Figure {
	var curves []chart.Series
	for _, r := range runs {
		s := chart.Series{Name: r.Worst.Target.Algorithm}
		for _, p := range r.Curve {
			s.Points = append(s.Points, chart.Point{X: p.Target.T.Seconds(), Y: float64(p.Worst.Peak)})
		}
		curves = append(curves, s)
	}
	return chart.WorstCaseFigure(chart.Meta{
		Title: fmt.Sprintf("Most admitted in any window of length T — one key, %d per %s, burst %d", pol.Limit, pol.Window, pol.EffectiveBurst()),
		Caption: fmt.Sprintf("engine measurements of the worst schedule found · search budget %d at T = W, %d at other T · seed %d\n%s",
			o.budget, o.budget/4, seed, worstCaseCommand(o, seed)),
	}, curves, float64(pol.Limit), pol.Window)
}

// worstCaseCommand is the command line that repeats a run, for chart captions.
func worstCaseCommand(o *worstCaseOptions, seed uint64) string {
	parts := []string{"rlsim worst-case", "--limit " + strconv.FormatInt(o.limit, 10), "--window " + o.window.String()}
	if o.burst > 0 {
		parts = append(parts, "--burst "+strconv.FormatInt(o.burst, 10))
	}
	if len(o.algorithms) > 0 {
		parts = append(parts, "--algorithms "+strings.Join(o.algorithms, ","))
	}
	for i, a := range append(o.imp.args(), o.own.args()...) {
		if i%2 == 1 {
			parts[len(parts)-1] += " " + a
			continue
		}
		parts = append(parts, a)
	}
	parts = append(parts, "--budget "+strconv.Itoa(o.budget))
	if !slices.Equal(o.spans, defaultSpans) {
		spans := make([]string, len(o.spans))
		for i, s := range o.spans {
			spans[i] = strconv.FormatFloat(s, 'g', -1, 64)
		}
		parts = append(parts, "--spans "+strings.Join(spans, ","))
	}
	parts = append(parts, "--seed "+strconv.FormatUint(seed, 10))
	return strings.Join(parts, " ")
}

func renderWorstCase(w io.Writer, format string, runs []worstcase.Findings, seed uint64, budget int) error {
	human := func(w io.Writer, markdown bool) error {
		tables := []report.Table{worstCaseSummary(runs, seed, budget)}
		for _, r := range runs {
			tables = append(tables, scheduleTable(r.Worst))
		}
		tables = append(tables, worstCaseCurveTable(runs, seed, false))
		return humanTables(tables...)(w, markdown)
	}
	return writeOutput(w, format, output{JSON: report.NewWorstCase(runs, seed, budget),
		CSV: tableCSV(worstCaseCurveTable(runs, seed, true)), Human: human})
}

// worstCaseWidth is the display width the human worst-case output keeps to: the tables
// split, and titles and notes wrap, to fit it. --format json and csv carry every column.
const worstCaseWidth = 100

// worstPossible is the figure the summary prints as the worst possible for one result, and
// whether it is proven: a known analytic bound ("<" when approached but never reached),
// unless the engine measured more than it; otherwise what the engine measured, which no
// traffic of one key can do less than (a lower bound, found by the search).
func worstPossible(x worstcase.Result) (figure, ratio string, proven bool) {
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

// worstCaseSummary is one row per algorithm with the essential columns: the worst
// possible, over the limit, whether it is proven or found, and what the engine observed.
// The formula, the source, the attack that found it and the evaluations are in the notes
// and the schedule tables (and every one in --format json).
func worstCaseSummary(runs []worstcase.Findings, seed uint64, budget int) report.Table {
	t := report.Table{
		Header: []string{"algorithm", "worst\npossible", "×\nlimit", "bound", "observed"},
		Width:  worstCaseWidth,
	}
	structured, searched := 0, 0
	for i, r := range runs {
		x := r.Worst
		if i == 0 {
			p := x.Target.Policy
			t.Title = fmt.Sprintf("worst case for one key — limit %d per %s, burst %d, in one window of %s; budget %d, seed %d",
				p.Limit, p.Window, p.EffectiveBurst(), p.Window, budget, seed)
		}
		figure, ratio, proven := worstPossible(x)
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

func scheduleTable(x worstcase.Result) report.Table {
	t := report.Table{
		Title: fmt.Sprintf("schedule for %s, found by %s: %d requests, %d admitted, %d in the window ending at %s",
			x.Target.Algorithm, x.FoundBy, x.Worst.Requests, x.Worst.Admitted, x.Worst.Peak, x.Worst.PeakEnd),
		Header: []string{"at", "count", "spread"},
		Width:  worstCaseWidth,
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
// for people one row per window length with a column per algorithm, split into several
// tables when the algorithms do not fit the width.
func worstCaseCurveTable(runs []worstcase.Findings, seed uint64, raw bool) report.Table {
	if raw {
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
	t := report.Table{
		Title:  "most admitted in any window of length T: found (analytic bound)",
		Header: []string{"T", "T/W"},
		Width:  worstCaseWidth,
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

func formatFloat(v float64) string {
	return strings.TrimSuffix(strings.TrimRight(strconv.FormatFloat(v, 'f', 2, 64), "0"), ".")
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
// policy, seed and epoch, searched once per run through its cache, and leaves it null
// when the policy is beyond compareWorstMaxUnits.
func addWorstOverAdmission(cache *worstcase.Cache, rep *report.Report, epoch time.Time, budget int, own *owned) error {
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
		if m := own.byName(r.Algorithm); m != nil {
			t.Own = m
		}
		v, err := cache.OverAdmission(t, budget, rep.Seed)
		if err != nil {
			return fmt.Errorf("scenario %s: worst case of %s: %w", rep.Scenario, r.Algorithm, err)
		}
		// The search never reports less than the traffic just run: what this scenario's
		// traffic got through is a lower bound on the worst any traffic can.
		v = max(v, r.OverAdmission)
		r.WorstOverAdmission = &v
	}
	return nil
}

// formatSpans writes spans as --spans reads them: "0.25,1,4".
func formatSpans(spans []float64) string {
	parts := make([]string, len(spans))
	for i, x := range spans {
		parts[i] = strconv.FormatFloat(x, 'g', -1, 64)
	}
	return "[" + strings.Join(parts, ",") + "]"
}
