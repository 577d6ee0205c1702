package cmd

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/run"
	"github.com/rlsim/rlsim/scenario"
	"github.com/rlsim/rlsim/worstcase"
)

type compareOptions struct {
	*globalOptions
	scenarios  []string
	algorithms []string
	limit      int64
	window     time.Duration
	burst      int64
	key        string
	layers     []string
	// worstBudget is the local-search budget of the worst_over_admission column.
	worstBudget int
	memory      bool
	workers     int
	// yes runs a scenario of confirmDecisions decisions or more.
	yes bool
	// redis and pipeline put cluster scenarios' shared store on a real Redis (pipeline.go);
	// redis is also where --lua scripts run.
	redis        string
	pipeline     int
	storeTimeout time.Duration
	own          ownOptions
	imp          importFlags
	tables       tableOptions
}

func newCompareCmd(g *globalOptions, streams IO) *cobra.Command {
	o := &compareOptions{globalOptions: g}
	c := &cobra.Command{
		Use:   "compare",
		Short: "Run every algorithm against the built-in scenarios (or the ones named)",
		Example: `  # every built-in scenario but the heavy ones; tables here, results and charts in out/
  rlsim compare

  # the fixed-window boundary case, as Markdown
  rlsim compare --scenario boundary-burst --format markdown

  # who is refused when an office behind one address is keyed on IP
  rlsim compare --scenario nat-crowd --key ip

  # the rate limits of an nginx.conf beside the scenario's algorithms, keyed as it keys them
  rlsim compare --scenario token-burst --import examples/import/nginx.conf --out ""

  # two algorithms at a tighter policy, one CSV row per request and no files in out/
  rlsim compare --scenario flood-one-key --algorithms token-bucket,gcra --limit 50 --window 10s --decisions decisions.csv --out ""

  # your own limiters beside the built-in two-counter window: a Lua script and a program
  rlsim compare --scenario two-counter-timed --algorithms sliding-window --lua examples/lua/notes_two_counter.lua --out ""
  rlsim compare --scenario boundary-burst --algorithms token-bucket --limiter-exec 'python3 examples/exec/token_bucket.py' --out ""`,
		Args: argCount(0, 0),
		RunE: func(c *cobra.Command, _ []string) error {
			return runCompare(c.Context(), o, streams)
		},
	}
	f := c.Flags()
	f.StringArrayVar(&o.scenarios, "scenario", nil, "scenario name or file (repeatable; default: every built-in)")
	addAlgorithmsFlag(c, &o.algorithms, "algorithms to compare (default: the scenario's, else the six)", nil)
	f.Var(unitsValue{&o.limit}, "limit", "override the policy's limit (units per window)")
	f.Var(windowValue{&o.window}, "window", "override the policy's window")
	f.Var(unitsValue{&o.burst}, "burst", "override the bucket algorithms' burst")
	f.StringVar(&o.key, "key", "", "key every request on this instead (user, ip, ipv6/N, xff:K, xff-leftmost, account, tenant, api-key, route); sets layered limits aside")
	f.StringSliceVar(&o.layers, "layers", nil, "check only these layers of the scenario's layered limits, comma-separated")
	o.imp.add(c, importRunUsage)
	f.IntVar(&o.worstBudget, "worst-budget", defaultCompareWorstBudget, "local-search budget of the worst_over_admission column (0: structured attacks only)")
	addScaleFlags(c, o)
	addStoreFlags(c, o)
	addOwnFlags(c, &o.own)
	addRunFlags(c, g)
	o.tables.addFlags(c)
	return c
}

func newRunCmd(g *globalOptions, streams IO) *cobra.Command {
	o := &compareOptions{globalOptions: g, worstBudget: defaultCompareWorstBudget}
	c := &cobra.Command{
		Use:   "run FILE|NAME",
		Short: "Run one scenario file or built-in scenario",
		Example: `  rlsim run boundary-burst
  rlsim run cluster-outage --format json --charts png,svg

  # a scenario file of your own (rlsim scenarios show NAME prints one to start from)
  rlsim run scenarios/boundary-burst.yaml --seed 7 --decisions decisions.csv

  # a Lua script of your own as the script of a cluster's shared store, beside the built-ins
  rlsim run cluster-nonatomic --lua examples/lua/fixed_window.lua --format json --out ""`,
		Args: argCount(1, 1),
		RunE: func(c *cobra.Command, args []string) error {
			o.scenarios = args
			return runCompare(c.Context(), o, streams)
		},
	}
	addScaleFlags(c, o)
	addStoreFlags(c, o)
	addOwnFlags(c, &o.own)
	addRunFlags(c, g)
	o.tables.addFlags(c)
	return c
}

// addRunFlags adds the output flags of compare and run, which use all of them.
func addRunFlags(c *cobra.Command, g *globalOptions) {
	g.addFormatFlag(c, allFormats...)
	g.addOutFlags(c)
	g.addSeedFlag(c)
	g.addDecisionsFlag(c)
}

func (o *compareOptions) validate() error {
	if o.worstBudget < 0 {
		return usagef("--worst-budget: must not be negative, got %d", o.worstBudget)
	}
	if o.key != "" {
		if err := scenario.ValidKey(o.key); err != nil {
			return usagef("--key: %v", err)
		}
	}
	if o.key != "" && len(o.layers) > 0 {
		return usagef("--key and --layers: choose one (--key replaces the layers)")
	}
	if o.workers < 0 {
		return usagef("--workers: must not be negative, got %d", o.workers)
	}
	if err := o.imp.check(); err != nil {
		return err
	}
	if err := o.tables.check(o.format); err != nil {
		return err
	}
	return o.checkStoreFlags()
}

func runCompare(ctx context.Context, o *compareOptions, streams IO) error {
	if err := o.validate(); err != nil {
		return err
	}
	chartFormats, err := parseCharts(o.charts)
	if err != nil {
		return err
	}
	imp, err := o.imp.load(streams.Err)
	if err != nil {
		return err
	}
	key := o.key
	if key == "" && len(o.layers) == 0 {
		key = imp.key
	}
	names := o.scenarios
	if len(names) == 0 {
		names = scenario.Builtins()
	}
	loaded := make([]*scenario.Scenario, 0, len(names))
	for _, n := range names {
		sc, err := loadScenario(n)
		if err != nil {
			return err
		}
		if len(o.layers) > 0 {
			if err := sc.KeepLayers(o.layers); err != nil {
				return usagef("--layers: %v", err)
			}
		}
		if sc.Heavy && len(o.scenarios) == 0 {
			continue // the default suite stays quick; heavy scenarios run by name
		}
		if key != "" {
			if err := sc.OverrideKey(key); err != nil {
				return usagef("--key: %v", err)
			}
		}
		algs := o.algorithms
		if len(algs) == 0 {
			algs = sc.Algorithms
		}
		if len(algs) == 0 {
			algs = algorithms.Defaults()
		}
		if len(imp.specs) > 0 && len(o.algorithms) == 0 {
			algs = withImported(algs, imp)
			sc.Algorithms = algs
		}
		if err := confirmSize(sc, algs, o.yes); err != nil {
			return err
		}
		loaded = append(loaded, sc)
	}
	if err := o.useRedis(loaded); err != nil {
		return err
	}
	defer tuneGCForHeavy(loaded)()
	ctx, stop := interruptible(ctx)
	defer stop()
	bar := newProgress(streams.Err, streams.Out, o.format, len(loaded), o.out != "")
	so, stopWatch := watchStore(o.storeTimeout, streams.Err, bar)
	defer stopWatch()
	own, err := o.own.open(ctx, o.redis, so, streams)
	if err != nil {
		return err
	}
	defer own.close(streams)
	runAlgs := o.algorithms
	if len(runAlgs) > 0 {
		runAlgs = withImported(runAlgs, imp)
	}
	opts := run.Options{Algorithms: runAlgs, Limit: o.limit, Window: o.window, Burst: o.burst, Workers: o.workers, Pipeline: o.pipeline, Context: ctx,
		Own: own.makers, Store: so}
	var meter storeMeter
	if o.seedSet {
		opts.Seed = &o.seed
	}

	// Every file of the run is staged and put in place together at the end, or none.
	var outs outputSet
	defer outs.discard()
	dw, err := stageDecisions(&outs, o.decisions)
	if err != nil {
		return err
	}
	opts.Decisions = dw
	if bar != nil {
		opts.Progress = bar.simulating
	}
	reports, requests, err := compareScenarios(loaded, o, opts, &meter, bar, len(chartFormats) > 0, own, streams)
	stopWatch()
	if err == nil && dw != nil {
		err = flushDecisions(dw, o.decisions)
	}
	if err != nil {
		return interruption(ctx, meter.failed(err), meter.cleaned(), own.cleaned(), notWritten(outs.discard()))
	}
	meter.report(streams.Err, o.pipeline)
	text, err := stageOutput(&outs, destination{o.format, o.out, chartFormats}, reportsOutput(reports, o.tables.choice(), true, bar.drawing))
	if err != nil {
		return err
	}
	where := whereFilesGo(&outs, o.out)
	bar.finish(requests)
	if err := commitWithStdout(&outs, streams.Out, text); err != nil {
		return err
	}
	if where != "" && bar != nil {
		// Said once the files are in place, on the terminal that shows the progress:
		// stdout is the report alone.
		fmt.Fprintln(streams.Err, "rlsim: "+where)
	}
	return nil
}

// compareScenarios runs every scenario of compare or run and returns their reports and
// the requests they decided.
func compareScenarios(loaded []*scenario.Scenario, o *compareOptions, opts run.Options, meter *storeMeter, bar *progress, charts bool, own *owned, streams IO) ([]*report.Report, int64, error) {
	var reports []*report.Report
	var requests int64
	var worst worstcase.Cache // the worst case of each policy, searched once per run
	for _, sc := range loaded {
		opts.Memory = o.memory || sc.Heavy
		if sc.Clients != nil && len(own.makers) > 0 {
			fmt.Fprintf(streams.Err, "rlsim: warning: scenario %s: its closed-loop clients are served by the built-in algorithms only, not by --lua or --limiter-exec limiters\n", sc.Name)
		}
		var rep *report.Report
		err := meter.run(func(stats *run.StoreStats) (err error) {
			opts.StoreStats = stats
			return own.measure(func() (err error) {
				rep, err = run.Run(sc, opts)
				return err
			})
		})
		opts.StoreStats = nil
		if err != nil {
			return nil, 0, err
		}
		collectAfterHeavy(sc)
		if err := addWorstOverAdmission(&worst, rep, sc.EpochTime(), o.worstBudget, own); err != nil {
			return nil, 0, err
		}
		if args := append(o.own.args(), o.imp.args()...); len(args) > 0 && rep.Reproduce == "" {
			// The summary's command brings the same limiters of the user's again.
			rep.Reproduce = rep.Command() + " " + strings.Join(args, " ")
		}
		// The keying chart compares the scenario's key with its compare_keys, unless
		// the user chose the key or layers.
		if charts && o.out != "" && o.key == "" && o.imp.file == "" && len(o.layers) == 0 {
			if rep.KeyRuns, err = keyRuns(sc, opts); err != nil {
				return nil, 0, err
			}
		}
		bar.scenarioDone(sc.Name)
		for _, x := range rep.Results {
			requests += x.Requests
		}
		reports = append(reports, rep)
	}
	return reports, requests, nil
}

// stageDecisions stages the decisions file in outs and returns its writer; with no path,
// nil.
func stageDecisions(outs *outputSet, path string) (*run.DecisionWriter, error) {
	if path == "" {
		return nil, nil
	}
	w, err := outs.create(path)
	if err != nil {
		return nil, fmt.Errorf("--decisions: %w", err)
	}
	return run.NewDecisionFile(w), nil
}

func flushDecisions(dw *run.DecisionWriter, path string) error {
	if err := dw.Flush(); err != nil {
		return fmt.Errorf("--decisions %s: %w", path, err)
	}
	return nil
}

// commitWithStdout completes the run's staged files, writes its report to stdout, and
// only then puts the files in place: a report that cannot be written (a full disk under
// a redirection) leaves the files unwritten, a file that cannot be completed prints no
// report.
func commitWithStdout(outs *outputSet, stdout io.Writer, report []byte) error {
	if err := outs.prepare(); err != nil {
		return err
	}
	if _, err := stdout.Write(report); err != nil {
		return fmt.Errorf("writing the report to stdout: %w", err)
	}
	return outs.commit()
}
