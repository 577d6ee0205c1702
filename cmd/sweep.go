package cmd

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlsim/rlsim/render"
	"github.com/rlsim/rlsim/render/chart"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/run"
	"github.com/rlsim/rlsim/sweep"
)

// chartOptions choose the chart a sweep or a merge draws.
type chartOptions struct {
	metric  string
	param   string
	formats []string // resolved by validate
}

func (c *chartOptions) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&c.metric, "chart-metric", "", "draw this metric (a JSON result name, e.g. over_admission) against --chart-param into --out")
	f.StringVar(&c.param, "chart-param", "", "the swept parameter on the chart's x axis (default: the first --param)")
}

type sweepOptions struct {
	*globalOptions
	scenario   string
	params     []string
	algorithms []string
	workers    int
	// storeTimeout bounds each round trip to the store a cluster scenario names.
	storeTimeout time.Duration
	shard        string
	chart        chartOptions
	formatSet    bool
}

func newSweepCmd(g *globalOptions, streams IO) *cobra.Command {
	o := &sweepOptions{globalOptions: g}
	c := &cobra.Command{
		Use:   "sweep --scenario NAME|FILE --param NAME=V1,V2... [--param ...]",
		Short: "Run a scenario over a grid of parameter values, on every core",
		Long: `sweep runs one scenario at every combination of the values given with --param
(` + strings.Join(sweep.Names, ", ") + `), the grid points in parallel,
and prints one row per grid point and algorithm.

--shard K/N runs only grid points i with i mod N = K-1 and prints them as a partial
results file (JSON); ` + "`rlsim merge`" + ` combines the N files into the results of one run.`,
		Example: `  # over_admission and the rest as the bucket grows
  rlsim sweep --scenario token-burst --param policy.burst=5,10,20,40

  # a grid of burst and window, over_admission charted into out/
  rlsim sweep --scenario flood-one-key --algorithms token-bucket,gcra --param policy.burst=10,50,100 --param policy.window=10s,1m --chart-metric over_admission

  # half of the grid, for a batch system; rlsim merge combines the halves
  rlsim sweep --scenario token-burst --param policy.burst=5,10,20,40 --shard 1/2 > shard-1.json`,
		Args: argCount(0, 0),
		RunE: func(c *cobra.Command, _ []string) error {
			o.formatSet = c.Flags().Changed("format")
			return runSweep(c.Context(), o, streams)
		},
	}
	f := c.Flags()
	f.StringVar(&o.scenario, "scenario", "", "scenario name or file to sweep (required)")
	f.StringArrayVar(&o.params, "param", nil, "NAME=V1,V2,...: a swept parameter and its values (repeatable; one of "+strings.Join(sweep.Names, ", ")+")")
	addAlgorithmsFlag(c, &o.algorithms, "algorithms to run (default: the scenario's, else the six)", nil)
	f.IntVar(&o.workers, "workers", 0, "grid points run at once (default: GOMAXPROCS; results do not depend on it)")
	f.StringVar(&o.shard, "shard", "", "K/N: run only the K-th of N shares of the grid and print a partial results file")
	addStoreTimeoutFlag(c, &o.storeTimeout)
	o.chart.addFlags(c)
	g.addFormatFlag(c, allFormats...)
	g.addOutFlags(c)
	g.addSeedFlag(c)
	return c
}

func runSweep(ctx context.Context, o *sweepOptions, streams IO) error {
	if o.scenario == "" {
		return usagef("--scenario: required (a built-in name or a file)")
	}
	if o.decisions != "" {
		return usagef("--decisions: a sweep writes no decisions file; use `rlsim run` on one grid point")
	}
	if len(o.params) == 0 {
		return usagef("--param: give at least one, such as --param policy.window=1s,10s,1m")
	}
	var params []sweep.Param
	for _, s := range o.params {
		p, err := sweep.ParseParam(s)
		if err != nil {
			return usagef("--param %v", err)
		}
		if slices.ContainsFunc(params, func(q sweep.Param) bool { return q.Name == p.Name }) {
			return usagef("--param: %s given twice", p.Name)
		}
		params = append(params, p)
	}
	if sweep.Size(params) > sweep.MaxPoints {
		return usagef("--param: the grid has more than %d points; sweep fewer values", sweep.MaxPoints)
	}
	if o.workers < 0 {
		return usagef("--workers: must not be negative, got %d", o.workers)
	}
	so, stopWatch := watchStore(o.storeTimeout, streams.Err, nil)
	defer stopWatch()
	opts := sweep.Options{Algorithms: o.algorithms, Workers: o.workers, Store: so}
	if o.shard != "" {
		sh, err := sweep.ParseShard(o.shard)
		if err != nil {
			return usagef("--shard: %v", err)
		}
		if o.formatSet && o.format != "json" {
			return usagef("--shard: a shard prints its partial results as JSON for `rlsim merge`; drop --format %s", o.format)
		}
		if o.chart.metric != "" {
			return usagef("--chart-metric: a shard draws no chart; draw it from `rlsim merge`")
		}
		opts.Shard = &sh
	}
	if err := o.chart.validate(params, o.charts); err != nil {
		return err
	}
	if o.seedSet {
		opts.Seed = &o.seed
	}
	sc, err := loadScenario(o.scenario)
	if err != nil {
		return err
	}
	ctx, stop := interruptible(ctx)
	defer stop()
	opts.Context = ctx
	res, err := sweep.Run(sc, params, opts)
	if err != nil {
		return interruption(ctx, err)
	}
	format := o.format
	if opts.Shard != nil {
		format = "json"
	}
	return renderSweep(o.globalOptions, streams, res, format, o.chart)
}

// validate checks the chart flags against the swept parameters and resolves the chart
// formats from --charts (png when it says none: --chart-metric asked for a chart), before
// anything runs or is written.
func (c *chartOptions) validate(params []sweep.Param, charts string) error {
	if c.metric == "" {
		if c.param != "" {
			return usagef("--chart-param: needs --chart-metric")
		}
		return nil
	}
	if !slices.Contains(sweep.MetricNames(), c.metric) {
		return usagef("--chart-metric: unknown metric %q (want one of %s)", c.metric, strings.Join(sweep.MetricNames(), ", "))
	}
	if c.param == "" {
		c.param = params[0].Name
	}
	if !slices.ContainsFunc(params, func(p sweep.Param) bool { return p.Name == c.param }) {
		return usagef("--chart-param: %q is not a swept parameter", c.param)
	}
	if c.param == "cluster.sync_to" || c.param == "cluster.eviction_policy" {
		return usagef("--chart-param: %s names choices, not numbers to draw along an axis; chart another parameter and it draws a panel per choice", c.param)
	}
	formats, err := parseCharts(charts)
	if err != nil {
		return err
	}
	if len(formats) == 0 {
		formats = []string{"png"}
	}
	c.formats = formats
	return nil
}

// renderSweep renders res to stdout in format and draws the chart, if asked, into
// g.out; stdout is written only once everything else has succeeded.
func renderSweep(g *globalOptions, streams IO, res *sweep.Results, format string, charts chartOptions) error {
	out := output{JSON: res, CSV: tableCSV(sweep.Table(res, true)), Human: func(w io.Writer, markdown bool) error {
		if markdown {
			return report.WriteMarkdown(w, humanSweepTable(res))
		}
		var text bytes.Buffer
		if err := render.WriteText(&text, humanSweepTable(res)); err != nil {
			return err
		}
		if strings.Count(text.String(), "\n") > sweepRecapAfter {
			text.WriteString("\n" + sweepRecap(res))
		}
		_, err := w.Write(text.Bytes())
		return err
	}}
	if charts.metric != "" {
		out.Figures = func() ([]*chart.Figure, error) {
			fig, err := render.SweepFigure(res, charts.metric, charts.param)
			if err != nil {
				return nil, err
			}
			return []*chart.Figure{fig}, nil
		}
	}
	var outs outputSet
	defer outs.discard()
	return writeResults(&outs, streams.Out, destination{format, g.out, charts.formats}, out)
}

type mergeOptions struct {
	*globalOptions
	chart chartOptions
}

func newMergeCmd(g *globalOptions, streams IO) *cobra.Command {
	o := &mergeOptions{globalOptions: g}
	c := &cobra.Command{
		Use:   "merge FILE...",
		Short: "Combine the partial results of a sharded sweep or replay into the results of one run",
		Long: `merge reads the files written by ` + "`rlsim sweep --shard K/N` or `rlsim replay --shard K/N`" + ` for
K = 1..N (in any order) and prints the whole sweep, or the whole replay, exactly as an
unsharded run prints it; a replay's results folder (--out) is written as the run writes it.`,
		Example: `  rlsim sweep --scenario token-burst --param policy.burst=5,10,20,40 --shard 1/2 > shard-1.json
  rlsim sweep --scenario token-burst --param policy.burst=5,10,20,40 --shard 2/2 > shard-2.json
  rlsim merge shard-1.json shard-2.json --chart-metric over_admission

  # a replay's shards, as JSON
  rlsim replay access.log --key user --shard 1/2 > user-1.json
  rlsim replay access.log --key user --shard 2/2 > user-2.json
  rlsim merge user-1.json user-2.json --format json`,
		Args: argCount(1, -1),
		RunE: func(_ *cobra.Command, files []string) error {
			return runMerge(o, streams, files)
		},
	}
	o.chart.addFlags(c)
	g.addFormatFlag(c, allFormats...)
	g.addOutFlags(c)
	return c
}

func runMerge(o *mergeOptions, streams IO, files []string) error {
	if o.decisions != "" {
		return usagef("--decisions: merge writes no decisions file")
	}
	if replay, err := isReplayPartial(files[0]); err != nil {
		return fmt.Errorf("merge: %w", err)
	} else if replay {
		if o.chart.metric != "" || o.chart.param != "" {
			return usagef("--chart-metric: a replay's merge draws the charts its run draws; --chart-metric is for sweeps")
		}
		return runMergeReplay(o, streams, files)
	}
	parts := make([]*sweep.Results, len(files))
	for i, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("merge: %w", err)
		}
		parts[i], err = sweep.ReadResults(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("merge: %s: %w", name, err)
		}
	}
	res, err := sweep.Merge(parts, files)
	if err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	if err := o.chart.validate(res.Sweep.Params, o.charts); err != nil {
		return err
	}
	return renderSweep(o.globalOptions, streams, res, o.format, o.chart)
}

// isReplayPartial says whether the results file name is a replay shard's.
func isReplayPartial(name string) (bool, error) {
	f, err := os.Open(name)
	if err != nil {
		return false, err
	}
	defer f.Close()
	head := make([]byte, 64)
	n, _ := io.ReadFull(f, head)
	return run.IsPartial(head[:n]), nil
}

// runMergeReplay merges a replay's shards and renders the report one run gives.
func runMergeReplay(o *mergeOptions, streams IO, files []string) error {
	chartFormats, err := parseCharts(o.charts)
	if err != nil {
		return err
	}
	parts := make([]*run.ReplayPartial, len(files))
	for i, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("merge: %w", err)
		}
		parts[i], err = run.ReadPartial(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("merge: %s: %w", name, err)
		}
	}
	rep, _, command, err := run.MergeReplay(parts, files)
	if err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	rep.Reproduce = command
	var outs outputSet
	defer outs.discard()
	return renderReplay(o.globalOptions, tableOptions{}, streams, &outs, rep, chartFormats)
}

// humanSweepTable is the sweep's table as a person reads it: each metric under its
// table's header ("over-admission", not over_admission), within 100 columns (split into
// parts that repeat the parameters and the algorithm where it is wider). CSV keeps the
// machine names.
func humanSweepTable(res *sweep.Results) report.Table {
	t := sweep.Table(res, false)
	t.Names = t.Header
	t.Header = make([]string, len(t.Names))
	for i, name := range t.Names {
		t.Header[i] = name
		if i > len(res.Sweep.Params) { // the parameters keep their names: they are what --param took
			t.Header[i] = report.ColumnHeader(name)
		}
	}
	t.Width, t.Keys = report.DefaultWidth, len(res.Sweep.Params)+1
	return t
}

// sweepRecapAfter is how many lines of table a terminal shows before the answer scrolls
// away: a longer sweep repeats it at the end (sweepRecap).
const sweepRecapAfter = 40

// sweepRecap is a sweep's answer in a line per algorithm (at most a dozen, then a count):
// at how many grid points it kept the promise, and its worst over-admission and where.
func sweepRecap(res *sweep.Results) string {
	type tally struct {
		points, kept int
		worst        float64
		where        string
	}
	var order []string
	tallies := map[string]*tally{}
	for _, row := range res.Rows {
		var at []string
		for i, p := range res.Sweep.Params {
			at = append(at, p.Name+"="+row.Values[i])
		}
		for _, x := range row.Results {
			name := report.ResultName(x)
			t := tallies[name]
			if t == nil {
				t = &tally{worst: -1}
				tallies[name] = t
				order = append(order, name)
			}
			t.points++
			if !report.Broke(x.OverAdmission) {
				t.kept++
			}
			if x.OverAdmission > t.worst {
				t.worst, t.where = x.OverAdmission, strings.Join(at, " ")
			}
		}
	}
	const most = 12
	width := 0
	for _, a := range order[:min(len(order), most)] {
		width = max(width, report.DisplayWidth(a))
	}
	var b strings.Builder
	b.WriteString("Recap: where each algorithm kept the promise (over-admission at most 1.00), and its worst:\n")
	for i, a := range order {
		if i == most {
			fmt.Fprintf(&b, "  … and %d more (the table names them)\n", len(order)-i)
			break
		}
		t := tallies[a]
		line := fmt.Sprintf("  %s%s  kept it at %d of %d points", a, strings.Repeat(" ", width-report.DisplayWidth(a)), t.kept, t.points)
		if t.kept < t.points {
			line += fmt.Sprintf(", worst %.2f× (%s)", t.worst, t.where)
		}
		if report.DisplayWidth(line) <= report.DefaultWidth {
			b.WriteString(line + "\n")
			continue
		}
		for _, l := range report.Wrap(line, report.DefaultWidth, "    ") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}
