package cmd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/render"
	"github.com/rlsim/rlsim/render/chart"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/scenario"
	"github.com/rlsim/rlsim/sim"
	"github.com/rlsim/rlsim/worstcase"
)

// defaultSpans are the window lengths of the worst-case curve, in windows W.
var defaultSpans = []float64{0.125, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 4}

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
	return writeResults(&outs, streams.Out, destination{o.format, o.out, formats}, output{
		JSON:  worstcase.NewReport(runs, seed, o.budget),
		CSV:   tableCSV(worstcase.CurveRows(runs, seed)),
		Human: humanTables(worstcase.Tables(runs, seed, o.budget)...),
		Figures: func() ([]*chart.Figure, error) {
			return []*chart.Figure{render.WorstCaseFigure(runs, pol, o.budget, seed, worstCaseCommand(o, seed))}, nil
		},
	})
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
