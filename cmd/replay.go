package cmd

import (
	"bytes"
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
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/run"
	"github.com/rlsim/rlsim/scenario"
	"github.com/rlsim/rlsim/traffic"
	"github.com/rlsim/rlsim/worstcase"
)

// Replay defaults: a policy of 100 requests per minute keyed on the client address, the
// first thing one would try on a log that carries nothing but addresses.
const (
	replayDefaultLimit  = 100
	replayDefaultWindow = time.Minute
	replayDefaultKey    = "ip"
)

type replayOptions struct {
	*globalOptions
	file       string
	logFormat  string
	key        string
	algorithms []string
	limit      int64
	window     time.Duration
	burst      int64
	timeScale  float64
	own        ownOptions
	imp        importFlags
	keySet     bool // --key was given, so an imported key does not replace it
	redis      string
	// storeTimeout bounds each round trip to the store the --lua scripts run on.
	storeTimeout time.Duration
	tables       tableOptions
}

func newReplayCmd(g *globalOptions, streams IO) *cobra.Command {
	o := &replayOptions{globalOptions: g}
	c := &cobra.Command{
		Use:   "replay LOG",
		Short: "Run every algorithm against a recorded access log",
		Long: `replay reads an access log (nginx/Apache combined format, JSON lines or CSV), maps
each line to a request's identities and runs the algorithms against it like any scenario.
Lines it cannot read are counted and named by line number; a log of mostly unreadable
lines is an error.

Like compare, it writes results.json, results.csv, timeline.csv, summary.md and the charts
under --out (a folder named after the log) and index.html over them.`,
		Example: `  # an nginx access log, keyed on the client address at 100 per minute
  rlsim replay access.log

  # the same log keyed on the user at 10 per second, played twice as fast
  rlsim replay access.log --key user --limit 10 --window 1s --time-scale 0.5

  # two algorithms, as JSON, with one CSV row per request
  rlsim replay access.log --algorithms fixed-window,sliding-window --format json --decisions decisions.csv

  # the limits of the haproxy.cfg that served the log, beside the six
  rlsim replay access.log --import examples/import/haproxy.cfg --out ""

  # your own Lua script beside the built-in fixed window
  rlsim replay access.log --algorithms fixed-window --lua examples/lua/incr_expire.lua --out ""`,
		Args: argCount(1, 1),
		RunE: func(c *cobra.Command, args []string) error {
			o.file = args[0]
			o.keySet = c.Flags().Changed("key")
			return runReplay(c.Context(), o, streams)
		},
	}
	f := c.Flags()
	f.StringVar(&o.logFormat, "log-format", "", "combined, jsonl or csv (default: from the extension: .jsonl/.ndjson, .csv, else combined)")
	f.StringVar(&o.key, "key", replayDefaultKey, "what requests are keyed on (user, ip, ipv6/N, xff:K, xff-leftmost, account, tenant, api-key, route)")
	addAlgorithmsFlag(c, &o.algorithms, "algorithms to compare (default: the six)", nil)
	o.limit, o.window = replayDefaultLimit, replayDefaultWindow
	f.Var(unitsValue{&o.limit}, "limit", "units per window")
	f.Var(windowValue{&o.window}, "window", "the policy's window")
	f.Var(unitsValue{&o.burst}, "burst", "the bucket algorithms' burst (default: the limit)")
	f.Float64Var(&o.timeScale, "time-scale", 1, "multiply the gaps between requests (0.5 plays the log twice as fast)")
	o.imp.add(c, importRunUsage)
	addOwnFlags(c, &o.own)
	addOwnRedisFlag(c, &o.redis, &o.storeTimeout)
	g.addFormatFlag(c, allFormats...)
	g.addOutFlags(c)
	g.addSeedFlag(c)
	g.addDecisionsFlag(c)
	o.tables.addFlags(c)
	return c
}

func (o *replayOptions) validate() error {
	if err := o.imp.check(); err != nil {
		return err
	}
	if o.logFormat == "" {
		switch strings.ToLower(filepath.Ext(o.file)) {
		case ".jsonl", ".ndjson":
			o.logFormat = "jsonl"
		case ".csv":
			o.logFormat = "csv"
		default:
			o.logFormat = "combined"
		}
	}
	if !slices.Contains(traffic.LogFormats, o.logFormat) {
		return usagef("--log-format: unknown format %q (want %s)", o.logFormat, strings.Join(traffic.LogFormats, ", "))
	}
	if err := scenario.ValidKey(o.key); err != nil {
		return usagef("--key: %v", err)
	}
	if o.limit <= 0 {
		return usagef("--limit: must be positive, got %d", o.limit)
	}
	if o.window <= 0 {
		return usagef("--window: must be positive, got %s", o.window)
	}
	if o.burst < 0 {
		return usagef("--burst: must not be negative, got %d", o.burst)
	}
	if !(o.timeScale > 0) || o.timeScale > 1e6 {
		return usagef("--time-scale: must be a positive factor, got %g", o.timeScale)
	}
	if o.redis != "" && len(o.own.lua) == 0 {
		return usagef("--redis: replay runs only --lua scripts on a Redis server, and none is given")
	}
	return o.tables.check(o.format)
}

func runReplay(ctx context.Context, o *replayOptions, streams IO) error {
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
	if !o.keySet && imp.key != "" {
		o.key = imp.key
	}
	f, err := os.Open(o.file)
	if err != nil {
		return fmt.Errorf("replay %s: %w", o.file, unwrapPath(err))
	}
	defer f.Close()
	log, err := traffic.ReadLog(f, o.logFormat)
	if err != nil {
		return fmt.Errorf("replay %s: %w", o.file, err)
	}
	sc, err := scenario.FromLog(o.file, log, algorithms.Policy{Limit: o.limit, Window: o.window, Burst: o.burst}, o.key, o.timeScale)
	if err != nil {
		return fmt.Errorf("replay %s: %w", o.file, err)
	}
	ctx, stop := interruptible(ctx)
	defer stop()
	so, stopWatch := watchStore(o.storeTimeout, streams.Err, nil)
	defer stopWatch()
	own, err := o.own.open(ctx, o.redis, so, streams)
	if err != nil {
		return err
	}
	defer own.close(streams)
	algs := o.algorithms
	if len(imp.specs) > 0 {
		if len(algs) == 0 {
			algs = algorithms.Defaults()
		}
		algs = withImported(algs, imp)
	}
	opts := run.Options{Algorithms: algs, Own: own.makers}
	if o.seedSet {
		opts.Seed = &o.seed
	}
	var outs outputSet
	defer outs.discard()
	if opts.Decisions, err = stageDecisions(&outs, o.decisions); err != nil {
		return err
	}
	opts.Context = ctx
	var rep *report.Report
	err = own.measure(func() (err error) {
		rep, err = run.Run(sc, opts)
		return err
	})
	if err == nil && opts.Decisions != nil {
		err = flushDecisions(opts.Decisions, o.decisions)
	}
	if err != nil {
		return interruption(ctx, err, own.cleaned(), notWritten(outs.discard()))
	}
	var worst worstcase.Cache
	if err := addWorstOverAdmission(&worst, rep, sc.EpochTime(), defaultCompareWorstBudget, own); err != nil {
		return err
	}
	rep.Reproduce = o.command(rep.Seed)
	if log.Bad > 0 {
		rep.UnreadLines = log.Bad
		for _, p := range log.Problems {
			rep.UnreadLineProblems = append(rep.UnreadLineProblems, p.String())
		}
		fmt.Fprintf(streams.Err, "rlsim: replay %s: %d of %d lines could not be read and were not replayed:\n", o.file, log.Bad, log.Lines)
		for _, p := range log.Problems {
			fmt.Fprintf(streams.Err, "  %s\n", p)
		}
		if log.Bad > len(log.Problems) {
			fmt.Fprintf(streams.Err, "  … and %d more\n", log.Bad-len(log.Problems))
		}
	}
	var buf bytes.Buffer
	if err := renderReports(&buf, o.format, []*report.Report{rep}, o.tables.choice(), false); err != nil {
		return err
	}
	if o.out != "" {
		if err := stageResults(&outs, o.out, chartFormats, []*report.Report{rep}, nil); err != nil {
			return err
		}
	}
	return commitWithStdout(&outs, streams.Out, buf.Bytes())
}

// command is the command line that replays the log again as o did, for the captions and
// summary of the results folder.
func (o *replayOptions) command(seed uint64) string {
	file := o.file
	if strings.ContainsAny(file, " \t'\"") {
		file = strconv.Quote(file)
	}
	parts := []string{"rlsim replay", file, "--log-format", o.logFormat, "--key", o.key,
		"--limit", strconv.FormatInt(o.limit, 10), "--window", o.window.String()}
	if o.burst > 0 {
		parts = append(parts, "--burst", strconv.FormatInt(o.burst, 10))
	}
	if o.timeScale != 1 {
		parts = append(parts, "--time-scale", strconv.FormatFloat(o.timeScale, 'g', -1, 64))
	}
	if len(o.algorithms) > 0 {
		parts = append(parts, "--algorithms", strings.Join(o.algorithms, ","))
	}
	parts = append(parts, o.imp.args()...)
	parts = append(parts, o.own.args()...)
	parts = append(parts, "--seed", strconv.FormatUint(seed, 10))
	return strings.Join(parts, " ")
}

func unwrapPath(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}
