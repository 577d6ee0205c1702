package cmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/gateway"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/run"
	"github.com/rlsim/rlsim/scenario"
	"github.com/rlsim/rlsim/sim"
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

// replayDefaultReorder is how far out of order a line may be by default: servers write a
// line when a request completes, and most requests complete within seconds.
const replayDefaultReorder = 10 * time.Second

// replayMaxReorder bounds --reorder-window: the window is held in memory.
const replayMaxReorder = 24 * time.Hour

type replayOptions struct {
	*globalOptions
	file        string
	logFormat   string
	nginxFormat string
	fields      []string
	key         string
	layers      []string
	algorithms  []string
	limit       int64
	window      time.Duration
	burst       int64
	timeScale   float64
	reorder     time.Duration
	subsecond   string
	strict      bool
	workers     int
	memory      bool
	shard       string
	formatSet   bool
	outSet      bool
	own         ownOptions
	imp         importFlags
	redis       string
	// storeTimeout bounds each round trip to the store the --lua scripts run on.
	storeTimeout time.Duration
	tables       tableOptions

	keySet      bool              // --key was given
	logFormatOf traffic.LogFormat // resolved by validate
	shardOf     *run.Shard
	fieldMap    map[string]string
	limitSpecs  []scenario.LimitSpec
}

func newReplayCmd(g *globalOptions, streams IO) *cobra.Command {
	o := &replayOptions{globalOptions: g}
	c := &cobra.Command{
		Use:   "replay LOG",
		Short: "Run every algorithm against a recorded access log",
		Long: `replay reads an access log — combined, JSON lines, CSV, a custom nginx log_format, an AWS
ALB, Envoy, HAProxy or Caddy log; gzipped or not; "-" for stdin — maps each line to a
request's identities and runs the algorithms against it like any scenario, reading,
parsing and simulating in one pass.

Each line keeps the finest time its format has. Lines out of order by up to
--reorder-window are put in their place; a line further out of order, or one that cannot be
read, is counted and named by line number (--strict makes it an error). Requests of whole
seconds are placed inside their second by --subsecond. A log of mostly unreadable lines is
an error.

Like compare, it writes results.json, results.csv, timeline.csv, summary.md and the charts
under --out (a folder named after the log) and index.html over them.`,
		Example: `  # an nginx access log, keyed on the client address at 100 per minute
  rlsim replay access.log

  # the same log keyed on the user at 10 per second, played twice as fast
  rlsim replay access.log --key user --limit 10 --window 1s --time-scale 0.5

  # a log written by nginx's log_format main, as nginx.conf gives it (with $msec and
  # $request_time in the format, replay reads arrivals to the millisecond)
  rlsim replay access.log --nginx-log-format '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" "$http_x_forwarded_for"'

  # the log from stdin (gzipped or not), keyed on a header, refusing a line it cannot read
  rlsim replay - --key header:User-Agent --strict < access.log

  # a JSON log whose user is in "uid" and time in "ts": --field maps them
  #   rlsim replay app.jsonl --field user=uid --field time=ts --key user

  # two layers: 5 logins a minute per account, then 100 a minute per address
  rlsim replay access.log --layer login=account:5/1m --layer ip:100/1m

  # two algorithms, as JSON, with one CSV row per request
  rlsim replay access.log --algorithms fixed-window,sliding-window --format json --decisions decisions.csv

  # your own Lua script beside the built-in fixed window
  rlsim replay access.log --algorithms fixed-window --lua examples/lua/incr_expire.lua --out ""

  # the log in two shards, on two machines; rlsim merge gives the results of one run
  rlsim replay access.log --shard 1/2 > part-1.json
  rlsim replay access.log --shard 2/2 > part-2.json
  rlsim merge part-1.json part-2.json`,
		Args: argCount(1, 1),
		RunE: func(c *cobra.Command, args []string) error {
			o.file = args[0]
			o.keySet = c.Flags().Changed("key")
			o.formatSet, o.outSet = c.Flags().Changed("format"), c.Flags().Changed("out")
			return runReplay(c.Context(), o, streams)
		},
	}
	f := c.Flags()
	f.StringVar(&o.logFormat, "log-format", "", strings.Join(traffic.LogFormats(), ", ")+" (default: from the extension: .jsonl/.ndjson, .csv, else combined; nginx with --nginx-log-format)")
	f.StringVar(&o.nginxFormat, "nginx-log-format", "", "the log was written by this nginx log_format string ($remote_addr, $msec, $request_time, $http_NAME, ...), or by the log_format NAME of an nginx.conf (@nginx.conf:NAME; @nginx.conf when it defines one); implies --log-format nginx")
	f.StringArrayVar(&o.fields, "field", nil, "read an identity from a column of the log's own: NAME=COLUMN, NAME one of "+strings.Join(traffic.FieldNames, ", ")+" or header:NAME (repeatable; for "+strings.Join(mappableFormats(), ", ")+" logs)")
	f.StringVar(&o.key, "key", replayDefaultKey, "what requests are keyed on (user, ip, ipv6/N, xff:K, xff-leftmost, account, tenant, api-key, route, header:NAME)")
	f.StringArrayVar(&o.layers, "layer", nil, "a layer of limits instead of --key: [NAME=]KEY:LIMIT/WINDOW[,burst=N], narrowest first (repeatable)")
	addAlgorithmsFlag(c, &o.algorithms, "algorithms to compare (default: the six)", nil)
	o.limit, o.window = replayDefaultLimit, replayDefaultWindow
	f.Var(unitsValue{&o.limit}, "limit", "units per window")
	f.Var(windowValue{&o.window}, "window", "the policy's window")
	f.Var(unitsValue{&o.burst}, "burst", "the bucket algorithms' burst (default: the limit)")
	f.Float64Var(&o.timeScale, "time-scale", 1, "multiply the gaps between requests (0.5 plays the log twice as fast)")
	f.DurationVar(&o.reorder, "reorder-window", replayDefaultReorder, "how far out of order (in time) a line may be and still be put in its place; further is skipped and reported")
	f.StringVar(&o.subsecond, "subsecond", "start", "how requests of whole-second times are placed inside their second: "+strings.Join(traffic.Placements, " or ")+" (uniform is seeded)")
	f.BoolVar(&o.strict, "strict", false, "make a line that cannot be read, or is too far out of order, an error (exit 1, naming file:line)")
	f.IntVar(&o.workers, "workers", 0, "goroutines parsing the log and deciding (0: one per core); the results do not depend on it")
	f.BoolVar(&o.memory, "memory", false, "report what the run held: per key, and the buffers of the log in flight")
	f.StringVar(&o.shard, "shard", "", "K/N: replay only the requests whose key hashes to shard K of N and print the shard's partial results (JSON) for `rlsim merge`")
	addOwnFlags(c, &o.own)
	o.imp.add(c, importRunUsage)
	addOwnRedisFlag(c, &o.redis, &o.storeTimeout)
	g.addFormatFlag(c, allFormats...)
	g.addOutFlags(c)
	g.addSeedFlag(c)
	g.addDecisionsFlag(c)
	o.tables.addFlags(c)
	return c
}

// parseLayer reads --layer [NAME=]KEY:LIMIT/WINDOW[,burst=N]. The key may hold colons
// itself (xff:1, header:X), so the limit is what follows the last one.
func parseLayer(s string) (scenario.LimitSpec, error) {
	body, opts, _ := strings.Cut(s, ",")
	name, rest, named := strings.Cut(body, "=")
	if !named {
		name, rest = "", body
	}
	i := strings.LastIndexByte(rest, ':')
	if i <= 0 {
		return scenario.LimitSpec{}, fmt.Errorf("%q: want [NAME=]KEY:LIMIT/WINDOW (login=account:5/1m)", s)
	}
	key, rate := rest[:i], rest[i+1:]
	if name == "" {
		name = key
	}
	if err := scenario.ValidKey(key); err != nil {
		return scenario.LimitSpec{}, fmt.Errorf("%q: %v", s, err)
	}
	limit, window, ok := strings.Cut(rate, "/")
	l := scenario.LimitSpec{Name: name, Key: key}
	var err error
	if l.Limit, err = strconv.ParseInt(limit, 10, 64); !ok || err != nil || l.Limit < 1 {
		return scenario.LimitSpec{}, fmt.Errorf("%q: the limit %q is not a whole number of at least 1 per a window (5/1m)", s, limit)
	}
	d, err := time.ParseDuration(window)
	if err == nil {
		err = sim.CheckWindow(d)
	}
	if err != nil {
		return scenario.LimitSpec{}, fmt.Errorf("%q: window %q: want a positive duration such as 1m", s, window)
	}
	l.Window = scenario.Duration(d)
	if opts != "" {
		b, ok := strings.CutPrefix(opts, "burst=")
		if l.Burst, err = strconv.ParseInt(b, 10, 64); !ok || err != nil || l.Burst < 1 {
			return scenario.LimitSpec{}, fmt.Errorf("%q: want ,burst=N with N at least 1 after the window", s)
		}
	}
	return l, nil
}

func (o *replayOptions) validate() error {
	if err := o.imp.check(); err != nil {
		return err
	}
	if conf, ok := strings.CutPrefix(o.nginxFormat, "@"); ok {
		text, err := nginxFormatFromConf(conf)
		if err != nil {
			return usagef("--nginx-log-format @%s: %w", conf, err)
		}
		o.nginxFormat = text
	}
	if o.nginxFormat != "" {
		if o.logFormat != "" && o.logFormat != "nginx" {
			return usagef("--nginx-log-format: the log is then in the nginx format; drop --log-format %s", o.logFormat)
		}
		o.logFormat = "nginx"
	}
	if o.logFormat == "" {
		o.logFormat = traffic.LogFormatFor(o.file)
	}
	f, err := traffic.LookupLogFormat(o.logFormat)
	if err != nil {
		return usagef("--log-format: %v", err)
	}
	if f.Spec && o.nginxFormat == "" {
		return usagef("--log-format %s: give the log_format with --nginx-log-format '$remote_addr ...'", f.Name)
	}
	o.logFormatOf = f
	if o.fieldMap, err = traffic.ParseFieldMap(o.fields); err != nil {
		return usagef("--field %v", err)
	}
	if len(o.fieldMap) > 0 && !f.Mappable {
		return usagef("--field: the %s format's fields are fixed; --field maps the columns of %s logs", f.Name, strings.Join(mappableFormats(), ", "))
	}
	if err := scenario.ValidKey(o.key); err != nil {
		return usagef("--key: %v", err)
	}
	o.limitSpecs = nil
	for _, s := range o.layers {
		l, err := parseLayer(s)
		if err != nil {
			return usagef("--layer %v", err)
		}
		for _, prev := range o.limitSpecs {
			if prev.Name == l.Name {
				return usagef("--layer %q: a layer named %s is given twice; name them (hourly=user:1000/1h)", s, l.Name)
			}
		}
		o.limitSpecs = append(o.limitSpecs, l)
	}
	if len(o.limitSpecs) > 0 && o.keySet {
		return usagef("--key and --layer: choose one (the layers name their keys)")
	}
	if o.reorder < 0 || o.reorder > replayMaxReorder {
		return usagef("--reorder-window: want a duration from 0s to %s, got %s", replayMaxReorder, o.reorder)
	}
	if !slices.Contains(traffic.Placements, o.subsecond) {
		return usagef("--subsecond: unknown rule %q (want %s)", o.subsecond, strings.Join(traffic.Placements, " or "))
	}
	if o.workers < 0 {
		return usagef("--workers: must not be negative, got %d", o.workers)
	}
	if o.shard != "" {
		sh, err := run.ParseShard(o.shard)
		if err != nil {
			return usagef("--shard: %v", err)
		}
		o.shardOf = &sh
		if _, err := run.ShardKey(o.key, o.limitSpecs); err != nil {
			return usagef("--shard: %v", err)
		}
		switch {
		case o.formatSet && o.format != "json":
			return usagef("--shard: a shard prints its partial results as JSON for `rlsim merge`; drop --format %s", o.format)
		case o.outSet && o.out != "":
			return usagef("--shard: a shard writes no results folder; `rlsim merge` writes it from the shards")
		case o.memory:
			return usagef("--shard --memory: a shard holds only its own keys; measure memory on a whole run")
		}
		o.out = ""
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
	if !o.keySet && len(o.limitSpecs) == 0 && imp.key != "" {
		o.key = imp.key
	}
	in := streams.In
	var size int64
	if o.file != "-" {
		f, err := os.Open(o.file)
		if err != nil {
			return fmt.Errorf("replay %s: %w", o.file, unwrapPath(err))
		}
		defer f.Close()
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			size = fi.Size()
		}
		in = f
	} else if in == nil {
		in = strings.NewReader("")
	}
	spec := run.ReplaySpec{
		File: o.file, Input: in, Format: o.logFormatOf, Fields: o.fieldMap, FormatSpec: o.nginxFormat,
		Policy: algorithms.Policy{Limit: o.limit, Window: o.window, Burst: o.burst}, Key: o.key, Layers: o.limitSpecs,
		TimeScale: o.timeScale, Reorder: o.reorder, Placement: o.subsecond, Strict: o.strict, ParseWorkers: o.workers, Size: size,
		Shard: o.shardOf,
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
	opts := run.Options{Algorithms: algs, Own: own.makers, Memory: o.memory, Workers: o.workers}
	if o.seedSet {
		opts.Seed = &o.seed
	}
	bar := newReplayProgress(streams.Err, streams.Out, o.format, run.ReplayName(o.file), size)
	keeper := newHeapKeeper()
	opts.Progress = func(p run.Progress) {
		bar.update(p)
		keeper.check(p.Requests)
	}
	var outs outputSet
	defer outs.discard()
	if opts.Decisions, err = stageDecisions(&outs, o.decisions); err != nil {
		return err
	}
	opts.Context = ctx
	var res *run.ReplayResult
	err = own.measure(func() (err error) {
		res, err = run.Replay(spec, opts)
		return err
	})
	var rep *report.Report
	if res != nil {
		rep = res.Report
	}
	if err == nil && opts.Decisions != nil {
		err = flushDecisions(opts.Decisions, o.decisions)
	}
	if err == nil && bar != nil && rep.Log != nil {
		bar.finish(int64(rep.Log.Used))
	}
	if err != nil {
		var le *traffic.LineError
		if errors.As(err, &le) {
			return interruption(ctx, err, own.cleaned(), notWritten(outs.discard()))
		}
		return interruption(ctx, fmt.Errorf("replay %s: %w", o.file, err), own.cleaned(), notWritten(outs.discard()))
	}
	// The run's per-key state is garbage now; hand it back before the worst-case search
	// and the rendering allocate, so that the process never holds both.
	keeper.release()
	if res.Partial != nil {
		return o.finishShard(res.Partial, own, streams, &outs)
	}
	var worst worstcase.Cache
	if err := addWorstOverAdmission(&worst, rep, res.Epoch, defaultCompareWorstBudget, own); err != nil {
		return err
	}
	rep.Reproduce = o.command(rep.Seed)
	if l := rep.Log; l != nil && l.Unreadable+l.OutOfOrder > 0 {
		fmt.Fprintf(streams.Err, "rlsim: replay %s: %d of %d lines were not replayed (%d unreadable, %d out of order beyond %s):\n",
			o.file, l.Unreadable+l.OutOfOrder, l.Lines, l.Unreadable, l.OutOfOrder, o.reorder)
		for _, p := range rep.UnreadLineProblems {
			fmt.Fprintf(streams.Err, "  %s\n", p)
		}
		if n := l.Unreadable + l.OutOfOrder; n > len(rep.UnreadLineProblems) {
			fmt.Fprintf(streams.Err, "  … and %d more\n", n-len(rep.UnreadLineProblems))
		}
	}
	return renderReplay(o.globalOptions, o.tables, streams, &outs, rep, chartFormats)
}

// renderReplay renders a replay's report (one run's, or the merge of shards') to stdout
// and its results folder, as compare renders a scenario's.
func renderReplay(g *globalOptions, tables tableOptions, streams IO, outs *outputSet, rep *report.Report, chartFormats []string) error {
	var buf bytes.Buffer
	if err := renderReports(&buf, g.format, []*report.Report{rep}, tables.choice(), false); err != nil {
		return err
	}
	if g.out != "" {
		if err := stageResults(outs, g.out, chartFormats, []*report.Report{rep}, nil); err != nil {
			return err
		}
	}
	return commitWithStdout(outs, streams.Out, buf.Bytes())
}

// finishShard prints a shard's partial results, with the worst cases every shard shares
// and the command line that replays the log whole.
func (o *replayOptions) finishShard(p *run.ReplayPartial, own *owned, streams IO, outs *outputSet) error {
	probe := &report.Report{Scenario: p.Report.Scenario, Seed: p.Report.Seed, Policy: p.Report.Policy}
	for _, a := range p.Algorithms {
		probe.Results = append(probe.Results, report.Result{Algorithm: a.Algorithm})
	}
	var worst worstcase.Cache
	if err := addWorstOverAdmission(&worst, probe, p.Epoch, defaultCompareWorstBudget, own); err != nil {
		return err
	}
	for i := range p.Algorithms {
		p.Algorithms[i].WorstOverAdmission = probe.Results[i].WorstOverAdmission
	}
	p.Command = o.command(p.Report.Seed)
	var buf bytes.Buffer
	if err := report.WriteJSON(&buf, p); err != nil {
		return err
	}
	return commitWithStdout(outs, streams.Out, buf.Bytes())
}

// mappableFormats are the formats whose columns --field maps.
func mappableFormats() []string {
	var out []string
	for _, n := range traffic.LogFormats() {
		if f, _ := traffic.LookupLogFormat(n); f.Mappable {
			out = append(out, n)
		}
	}
	return out
}

// command is the command line that replays the log again as o did, for the captions and
// summary of the results folder.
func (o *replayOptions) command(seed uint64) string {
	file := o.file
	if strings.ContainsAny(file, " \t'\"") {
		file = strconv.Quote(file)
	}
	parts := []string{"rlsim replay", file, "--log-format", o.logFormat}
	if o.nginxFormat != "" {
		parts = append(parts, "--nginx-log-format", shellQuote(o.nginxFormat))
	}
	for _, f := range o.fields {
		parts = append(parts, "--field", shellQuote(f))
	}
	if len(o.layers) > 0 {
		for _, l := range o.layers {
			parts = append(parts, "--layer", shellQuote(l))
		}
	} else {
		parts = append(parts, "--key", o.key, "--limit", strconv.FormatInt(o.limit, 10), "--window", o.window.String())
	}
	if o.reorder != replayDefaultReorder {
		parts = append(parts, "--reorder-window", o.reorder.String())
	}
	if o.subsecond != "start" {
		parts = append(parts, "--subsecond", o.subsecond)
	}
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

// nginxFormatFromConf reads the log_format that ref names, "FILE:NAME" or "FILE", from
// the nginx configuration FILE (with its includes, as rlsim import reads it), and returns
// it as --nginx-log-format takes it. FILE alone is the one log_format it defines; NAME
// "combined", when the file does not define it, is nginx's predefined one.
func nginxFormatFromConf(ref string) (string, error) {
	path, name := ref, ""
	if i := strings.LastIndexByte(ref, ':'); i > 0 && !strings.ContainsAny(ref[i+1:], `/\`) {
		path, name = ref[:i], ref[i+1:]
	}
	formats, err := gateway.NginxLogFormats(path, gateway.OSFiles{})
	if err != nil {
		return "", err
	}
	names := make([]string, 0, len(formats))
	for _, f := range formats {
		names = append(names, f.Name)
	}
	slices.Sort(names)
	var found *gateway.NginxLogFormat
	for i := range formats {
		if name == "" && len(formats) == 1 || formats[i].Name == name {
			found = &formats[i] // the last definition of a name, as nginx refuses a second one
		}
	}
	switch {
	case found == nil && name == "combined":
		found = &gateway.NginxLogFormat{Name: "combined", Format: gateway.NginxCombined}
	case found == nil && name == "" && len(formats) == 0:
		return "", errors.New("it defines no log_format: name one (@FILE:combined for nginx's own)")
	case found == nil && name == "":
		return "", fmt.Errorf("it defines %d log_formats (%s): name one, @%s:NAME", len(formats), strings.Join(names, ", "), path)
	case found == nil:
		return "", fmt.Errorf("no log_format %s (it defines %s)", name, strings.Join(append(names, "and nginx's combined"), ", "))
	}
	text := quoteNginxFormat(found.Format)
	if found.Escape != "" {
		text = "escape=" + found.Escape + " " + text
	}
	return text, nil
}

// quoteNginxFormat quotes a log_format's text as nginx.conf would write it, so that
// --nginx-log-format reads it back whole: in single quotes, and the runs holding a single
// quote in double quotes (nginx joins the strings).
func quoteNginxFormat(text string) string {
	var b strings.Builder
	for text != "" {
		q, stop := byte('\''), byte('\'')
		if text[0] == '\'' {
			q, stop = '"', '"'
		}
		n := strings.IndexByte(text, stop)
		if n < 0 {
			n = len(text)
		}
		b.WriteByte(q)
		b.WriteString(text[:n])
		b.WriteByte(q)
		text = text[n:]
	}
	return b.String()
}
