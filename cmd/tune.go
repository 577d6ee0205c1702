package cmd

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/gateway"
	"github.com/rlsim/rlsim/probe"
	"github.com/rlsim/rlsim/render"
	"github.com/rlsim/rlsim/render/chart"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/run"
	"github.com/rlsim/rlsim/scenario"
	"github.com/rlsim/rlsim/sim"
	"github.com/rlsim/rlsim/traffic"
	"github.com/rlsim/rlsim/tune"
)

// tuneDefaultGoal is the goal of a tune given none: refuse almost no legitimate request.
const tuneDefaultGoal = "legit-refused<=0.1%"

type tuneOptions struct {
	*globalOptions
	input       string
	goals       []string
	attackers   []string
	algorithms  []string
	products    []string
	keys        []string
	limits      string
	windows     string
	bursts      string
	forGateway  string
	logFormat   string
	nginxFormat string
	fields      []string
	subsecond   string
	workers     int
	keySet      bool
	verifyURL   string
	verifyFor   time.Duration
	allowRemote bool

	goalsOf   []tune.Goal
	rules     []tune.AttackerRule
	space     tune.Space
	formatOf  traffic.LogFormat
	fieldMap  map[string]string
	isLog     bool
	scenario  *scenario.Scenario
	chartsFor []string
}

func newTuneCmd(g *globalOptions, streams IO) *cobra.Command {
	o := &tuneOptions{globalOptions: g}
	c := &cobra.Command{
		Use:   "tune LOG|SCENARIO",
		Short: "Find the policy to deploy: the limit, window, burst and key that meet your goals",
		Long: `tune searches the policies a limit could be given — algorithm, key, limit, window, burst,
or a product's model in its own parameters — for those that meet the goals on a recorded log
or a scenario's traffic, and prints the recommended policy with its margins, the runner-up
of each algorithm, what each goal costs and the Pareto front of legit refused, attacker
admitted and backend peak.

Goals are upper bounds: legit-refused<=0.1%, attacker-admitted<=5%, backend-peak<=500/s,
over-admission<=1.05, false-rejects<=1%, and per key, for logs without labels,
key-refused<=0.1%@p99.9 (99.9% of the keys have at most 0.1% of their requests refused).
Attackers are the scenario's, the log's own label field, or --attacker's.

The log is parsed once; every candidate is run over it exactly, and the recommendation
is then replayed (or run) by the ordinary engine, which must give the same figures.
See docs/tune.md.`,
		Example: `  # the policy for an access log, keyed on the address or the user, for 99.9% of keys
  rlsim tune access.log --key ip,user --goal 'key-refused<=0.1%@p99.9'

  # a shop's JSON log; the attacker is a prefix; at most 60% of its requests through
  rlsim tune examples/logs/shop.jsonl --attacker 'ip=203.0.113.0/24' --goal 'legit-refused<=0.1%' --goal 'attacker-admitted<=60%'

  # a scenario, token buckets only, the limit between 50 and 500 per minute
  rlsim tune ip-rotation --algorithms token-bucket --limit 50..500 --window 1m

  # nginx's limit_req alone, with the configuration to paste:
  #   rlsim tune access.log --for nginx --format markdown`,
		Args: argCount(1, 1),
		RunE: func(c *cobra.Command, args []string) error {
			o.input = args[0]
			o.keySet = c.Flags().Changed("key")
			return runTune(c.Context(), o, streams)
		},
	}
	f := c.Flags()
	f.StringArrayVar(&o.goals, "goal", nil, "a goal METRIC<=VALUE: "+strings.Join(goalMetricNames(), ", ")+" (repeatable; default "+tuneDefaultGoal+")")
	f.StringArrayVar(&o.attackers, "attacker", nil, "a log's attacker requests: FIELD=VALUE or FIELD=@FILE, FIELD one of "+strings.Join(tune.AttackerFieldNames(), ", ")+" (repeatable)")
	addAlgorithmsFlag(c, &o.algorithms, "the algorithms to search (default: "+strings.Join(tune.DefaultFamilies(), ", ")+")", func(k *algorithms.Kind) error {
		if len(k.Params) > 0 {
			return fmt.Errorf("tune searches a product's parameters itself: name it with --products %s or --for", k.Name)
		}
		if _, err := tune.LookupFamily(k.Name); err != nil {
			return err
		}
		return nil
	})
	f.StringSliceVar(&o.products, "products", nil, "products' models to search as well: nginx, haproxy, envoy-local, kong, traefik")
	f.StringSliceVar(&o.keys, "key", nil, "the keys to search, comma-separated (default: ip, or the scenario's key)")
	f.StringVar(&o.limits, "limit", "", "the limits L to search: A..B (bisected), or a list A,B,C (default: from the traffic)")
	f.StringVar(&o.windows, "window", "1s,10s,1m", "the windows W to search, comma-separated")
	f.StringVar(&o.bursts, "burst", "", "the bursts to search for bucket algorithms: A..B or a list (default: bisected below each key's arrival curve)")
	f.StringVar(&o.forGateway, "for", "", "search the model of this gateway alone and print its configuration: nginx, haproxy, envoy, kong, traefik or redis-lua")
	f.StringVar(&o.logFormat, "log-format", "", strings.Join(traffic.LogFormats(), ", ")+" (default: from the extension, as replay)")
	f.StringVar(&o.nginxFormat, "nginx-log-format", "", "the log was written by this nginx log_format string; implies --log-format nginx")
	f.StringArrayVar(&o.fields, "field", nil, "read an identity from a column of the log's own: NAME=COLUMN (as replay)")
	f.StringVar(&o.subsecond, "subsecond", "start", "how requests of whole-second times are placed inside their second (as replay)")
	f.StringVar(&o.verifyURL, "verify", "", "send the first --verify-for of the traffic to a server running the recommendation and judge it decision by decision")
	f.DurationVar(&o.verifyFor, "verify-for", 20*time.Second, "how much of the traffic --verify sends, in real time from its first request")
	f.BoolVar(&o.allowRemote, "allow-remote", false, "let --verify send to a server not on loopback")
	f.IntVar(&o.workers, "workers", 0, "goroutines searching (0: one per core); the results do not depend on it")
	g.addFormatFlag(c, allFormats...)
	g.addOutFlags(c)
	return c
}

func goalMetricNames() []string {
	var out []string
	for _, m := range tune.GoalMetrics() {
		out = append(out, string(m))
	}
	return out
}

func (o *tuneOptions) validate() error {
	if o.verifyURL != "" {
		if _, err := checkProbeURL(nil, o.verifyURL, o.allowRemote, false); err != nil {
			return fmt.Errorf("--verify: %w", err)
		}
		if o.verifyFor <= 0 {
			return usagef("--verify-for: must be positive, got %s", o.verifyFor)
		}
	}
	goals := o.goals
	if len(goals) == 0 {
		goals = []string{tuneDefaultGoal}
	}
	o.goalsOf = nil
	for _, text := range goals {
		g, err := tune.ParseGoal(text)
		if err != nil {
			return usagef("--goal %v", err)
		}
		o.goalsOf = append(o.goalsOf, g)
	}
	o.rules = nil
	for _, text := range o.attackers {
		r, err := tune.ParseAttackerRule(text, func(name string) (io.ReadCloser, error) { return os.Open(name) })
		if err != nil {
			return usagef("--attacker %v", err)
		}
		o.rules = append(o.rules, r)
	}
	var err error
	if o.limits != "" {
		if o.space.Limits, err = tune.ParseRange(o.limits); err != nil {
			return usagef("--limit %v", err)
		}
	}
	if o.bursts != "" {
		if o.space.Bursts, err = tune.ParseRange(o.bursts); err != nil {
			return usagef("--burst %v", err)
		}
	}
	o.space.Windows = nil
	for _, w := range strings.Split(o.windows, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(w))
		if err == nil {
			err = sim.CheckWindow(d)
		}
		if err != nil {
			return usagef("--window %q: want positive durations separated by commas (1s,10s,1m)", w)
		}
		if !slices.Contains(o.space.Windows, d) {
			o.space.Windows = append(o.space.Windows, d)
		}
	}
	slices.Sort(o.space.Windows)
	fams := o.algorithms
	if len(fams) == 0 && len(o.products) == 0 {
		fams = tune.DefaultFamilies()
	}
	fams = slices.Clone(fams)
	for _, p := range o.products {
		f, err := tune.LookupFamily(strings.TrimSpace(p))
		if err != nil || len(algorithms.Lookup(f.Name).Params) == 0 {
			return usagef("--products %q: want a product tune searches: nginx, haproxy, envoy-local, kong, traefik", p)
		}
		fams = append(fams, f.Name)
	}
	if o.forGateway != "" {
		fam, err := tune.ForProduct(o.forGateway)
		if err != nil {
			return usagef("--for: %v", err)
		}
		fams = []string{fam}
	}
	slices.SortStableFunc(fams, func(a, b string) int { return algorithms.Rank(a) - algorithms.Rank(b) })
	o.space.Families = slices.Compact(fams)
	if o.workers < 0 {
		return usagef("--workers: must not be negative, got %d", o.workers)
	}
	if !slices.Contains(traffic.Placements, o.subsecond) {
		return usagef("--subsecond: unknown rule %q (want %s)", o.subsecond, strings.Join(traffic.Placements, " or "))
	}
	return nil
}

// resolveInput decides whether the argument is a log or a scenario: a file whose name
// ends in .yaml or .yml, or a built-in scenario's name, is a scenario.
func (o *tuneOptions) resolveInput() error {
	ext := strings.ToLower(filepath.Ext(o.input))
	_, statErr := os.Stat(o.input)
	if ext == ".yaml" || ext == ".yml" || (statErr != nil && o.input != "-") {
		sc, err := loadScenario(o.input)
		if err != nil {
			return err
		}
		switch {
		case sc.Cluster != nil, len(sc.Limits) > 0, sc.Clients != nil:
			return usagef("tune %s: tune takes open-loop traffic under one limit; the scenario has a cluster, layers or clients", o.input)
		case len(o.rules) > 0:
			return usagef("--attacker: a scenario labels its own attackers")
		}
		o.scenario = sc
		if len(o.keys) == 0 {
			o.keys = []string{sc.Key}
		}
		return nil
	}
	o.isLog = true
	if len(o.keys) == 0 {
		o.keys = []string{replayDefaultKey}
	}
	if o.nginxFormat != "" {
		if o.logFormat != "" && o.logFormat != "nginx" {
			return usagef("--nginx-log-format: the log is then in the nginx format; drop --log-format %s", o.logFormat)
		}
		o.logFormat = "nginx"
	}
	if o.logFormat == "" {
		o.logFormat = traffic.LogFormatFor(o.input)
	}
	f, err := traffic.LookupLogFormat(o.logFormat)
	if err != nil {
		return usagef("--log-format: %v", err)
	}
	if f.Spec && o.nginxFormat == "" {
		return usagef("--log-format %s: give the log_format with --nginx-log-format '$remote_addr ...'", f.Name)
	}
	o.formatOf = f
	if o.fieldMap, err = traffic.ParseFieldMap(o.fields); err != nil {
		return usagef("--field %v", err)
	}
	return nil
}

func runTune(ctx context.Context, o *tuneOptions, streams IO) error {
	if err := o.validate(); err != nil {
		return err
	}
	chartFormats, err := parseCharts(o.charts)
	if err != nil {
		return err
	}
	if err := o.resolveInput(); err != nil {
		return err
	}
	for _, k := range o.keys {
		if err := scenario.ValidKey(k); err != nil {
			return usagef("--key: %v", err)
		}
	}
	o.space.Keys = o.keys
	var s *tune.Sample
	if o.isLog {
		s, err = o.readLog(streams)
	} else {
		s, err = o.sampleScenario()
	}
	if err != nil {
		return err
	}
	workers := o.workers
	if workers == 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	res, err := tune.Search(s, o.space, o.goalsOf, workers)
	if errors.Is(err, tune.ErrEmptySpace) {
		return usagef("%v", err)
	}
	if err != nil {
		return fmt.Errorf("tune %s: %w", o.input, err)
	}
	rep := tune.NewReport(s, res)
	chosen := res.Recommended
	if chosen == nil {
		chosen = res.Closest
	}
	if rep.Verified, err = o.verify(ctx, s, chosen); err != nil {
		return err
	}
	if o.forGateway != "" && res.Recommended != nil {
		snippet, err := gateway.Snippet(res.Recommended.Spec, res.Recommended.Key)
		if err != nil {
			return fmt.Errorf("--for %s: %w", o.forGateway, err)
		}
		rep.For, rep.Snippet = o.forGateway, snippet
	}
	if o.verifyURL != "" && res.Recommended != nil {
		if rep.Served, err = o.verifyServer(ctx, streams, s, res.Recommended); err != nil {
			return err
		}
	}
	var outs outputSet
	defer outs.discard()
	err = writeResults(&outs, streams.Out, destination{o.format, o.out, chartFormats}, output{
		JSON: rep, CSV: rep.WriteCSV, Human: rep.WriteText,
		Figures: func() ([]*chart.Figure, error) {
			return []*chart.Figure{render.TuneFigure(rep, o.command())}, nil
		},
		FigureDir: "tune-" + rep.Sample,
	})
	if err != nil {
		return err
	}
	if res.Recommended == nil {
		p := res.Closest
		var misses []string
		for _, m := range rep.Closest.Margins {
			if m.Margin < 0 {
				misses = append(misses, fmt.Sprintf("%s by %s", m.Goal, tune.FormatValue(m.Goal, -m.Margin)))
			}
		}
		return fmt.Errorf("tune %s: no policy in the space meets the goals; the closest, %s, misses %s",
			o.input, p.Candidate, strings.Join(misses, ", "))
	}
	return nil
}

// readLog parses the log once into the sample, reading what the keys and the attacker
// rules need, in the order replay delivers the lines.
func (o *tuneOptions) readLog(streams IO) (*tune.Sample, error) {
	in := streams.In
	if o.input != "-" {
		f, err := os.Open(o.input)
		if err != nil {
			return nil, fmt.Errorf("tune %s: %w", o.input, unwrapPath(err))
		}
		defer f.Close()
		in = f
	} else if in == nil {
		in = strings.NewReader("")
	}
	b, err := tune.NewBuilder(run.ReplayName(o.input), o.keys)
	if err != nil {
		return nil, usagef("--key: %v", err)
	}
	cfg := traffic.LogConfig{Fields: o.fieldMap, Spec: o.nginxFormat, Want: traffic.WantActor | traffic.WantPlan}
	addHeader := func(h string) {
		if h != "" && !slices.Contains(cfg.Headers, h) {
			cfg.Headers = append(cfg.Headers, h)
		}
	}
	for _, k := range b.Keyers() {
		cfg.Want |= k.Reads()
		addHeader(k.Header())
	}
	for _, r := range o.rules {
		addHeader(r.Header())
		cfg.Want |= map[string]traffic.Identities{"ip": traffic.WantIP, "user": traffic.WantUser, "account": traffic.WantAccount,
			"tenant": traffic.WantTenant, "api-key": traffic.WantAPIKey, "route": traffic.WantRoute}[r.Field()]
		if r.Header() != "" {
			cfg.Want |= traffic.WantHeaders
		}
	}
	lr, err := traffic.OpenLog(in, traffic.LogReaderOptions{Format: o.formatOf, Config: cfg, Workers: o.workers,
		Reorder: replayDefaultReorder, Placement: o.subsecond, Seed: scenario.DefaultSeed})
	if err != nil {
		return nil, fmt.Errorf("tune %s: %w", o.input, err)
	}
	defer lr.Close()
	for l := lr.NextLine(); l != nil; l = lr.NextLine() {
		attacker := l.Request.Class == traffic.Attacker
		if len(o.rules) > 0 {
			attacker = false
			for _, r := range o.rules {
				if r.Match(&l.Request) {
					attacker = true
					break
				}
			}
		}
		b.Add(l.Time, &l.Request, attacker)
	}
	if err := lr.Err(); err != nil {
		return nil, fmt.Errorf("tune %s: %w", o.input, err)
	}
	if err := traffic.CheckUnread(lr.Stats(), o.formatOf.Name); err != nil {
		return nil, fmt.Errorf("tune %s: %w", o.input, err)
	}
	s := b.Finish()
	if s.Requests() == 0 {
		return nil, fmt.Errorf("tune %s: no requests", o.input)
	}
	return s, nil
}

// sampleScenario builds the sample from the scenario's open-loop traffic, generated as a
// run generates it, delivered in time order (earlier sources first at one instant).
func (o *tuneOptions) sampleScenario() (*tune.Sample, error) {
	sc := o.scenario
	b, err := tune.NewBuilder(sc.Name, o.keys)
	if err != nil {
		return nil, usagef("--key: %v", err)
	}
	sources := sc.Sources(sim.NewRNG(sc.SeedOr(scenario.DefaultSeed), sim.RunStream))
	heads := make([]traffic.Request, len(sources))
	live := make([]bool, len(sources))
	for i, src := range sources {
		live[i] = src.Next(&heads[i])
	}
	network := traffic.NewNetwork(sc.Proxies)
	epoch := sc.EpochTime().UnixNano()
	for {
		next := -1
		for i := range sources {
			if live[i] && (next < 0 || heads[i].At < heads[next].At) {
				next = i
			}
		}
		if next < 0 {
			break
		}
		req := heads[next]
		network.Deliver(&req)
		b.Add(epoch+int64(req.At), &req, req.Class == traffic.Attacker)
		live[next] = sources[next].Next(&heads[next])
	}
	s := b.Finish()
	if s.Requests() == 0 {
		return nil, fmt.Errorf("tune %s: the scenario sends no requests", sc.Name)
	}
	return s, nil
}

// verify re-runs c the ordinary way — rlsim replay of the log, rlsim run of the
// scenario, with c's policy — and fails unless it gives every figure the search gave.
// A log labelled by --attacker is checked decision by decision, the labels being the
// rules' (replay knows only the log's own).
func (o *tuneOptions) verify(ctx context.Context, s *tune.Sample, c *tune.Point) (*tune.Verification, error) {
	refused := make([]bool, s.Requests())
	mine, err := tune.Evaluate(s, c.Candidate, func(i int) { refused[i] = true })
	if err != nil {
		return nil, err
	}
	opts := run.Options{Algorithms: []string{c.Spec}, Context: ctx}
	var rep *report.Report
	v := &tune.Verification{}
	var check *decisionCheck
	if o.isLog {
		f, err := os.Open(o.input)
		if err != nil {
			return nil, fmt.Errorf("tune %s: %w", o.input, unwrapPath(err))
		}
		defer f.Close()
		if len(o.rules) > 0 {
			check = newDecisionCheck(s, refused)
			opts.Decisions = run.NewDecisionFile(check.w)
		}
		res, err := run.Replay(run.ReplaySpec{File: o.input, Input: f, Format: o.formatOf, Fields: o.fieldMap, FormatSpec: o.nginxFormat,
			Policy: c.Policy(), Key: c.Key, TimeScale: 1, Reorder: replayDefaultReorder, Placement: o.subsecond,
			ParseWorkers: o.workers}, opts)
		if check != nil {
			if ferr := opts.Decisions.Flush(); err == nil {
				err = ferr
			}
			if cerr := check.close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			return nil, fmt.Errorf("tune %s: re-checking %s by replay: %w", o.input, c.Candidate, err)
		}
		rep = res.Report
		v.By = fmt.Sprintf("rlsim replay %s --key %s --algorithms %s --limit %d --window %s", filepath.Base(o.input), c.Key, shellQuote(c.Spec), c.Limit, c.Window)
	} else {
		opts.Limit, opts.Window, opts.Burst = c.Limit, c.Window, c.Burst
		sc := *o.scenario
		sc.Key = c.Key
		if rep, err = run.Run(&sc, opts); err != nil {
			return nil, fmt.Errorf("tune %s: re-checking %s by a run: %w", o.input, c.Candidate, err)
		}
		v.By = fmt.Sprintf("rlsim run %s --key %s --algorithms %s --limit %d --window %s", filepath.Base(o.input), c.Key, shellQuote(c.Spec), c.Limit, c.Window)
	}
	if c.Burst > 0 {
		v.By += fmt.Sprintf(" --burst %d", c.Burst)
	}
	if len(rep.Results) != 1 {
		return nil, fmt.Errorf("tune %s: re-checking %s gave %d results", o.input, c.Candidate, len(rep.Results))
	}
	got := rep.Results[0]
	type figure struct {
		name       string
		them, mine float64
	}
	figs := []figure{
		{"requests", float64(got.Requests), float64(mine.Requests)},
		{"admitted", float64(got.Admitted), float64(mine.Admitted)},
		{"rejected", float64(got.Rejected), float64(mine.Rejected)},
		{"backend_peak", float64(got.BackendPeak), float64(mine.BackendPeak)},
		{"peak_window_admitted", float64(got.PeakWindowAdmitted), float64(mine.PeakWindowAdmitted)},
		{"over_admission", got.OverAdmission, mine.OverAdmission},
		{"false_reject", float64(got.FalseReject), float64(mine.FalseReject)},
	}
	if check != nil {
		figs = append(figs, figure{"decisions", float64(check.rows), float64(s.Requests())},
			figure{"legit refused", float64(check.legitRefused), float64(mine.LegitRejected)},
			figure{"attacker admitted", float64(check.attackerAdmitted), float64(mine.AttackerAdmitted)})
		v.Decisions = check.rows
	} else {
		if mine.Legit > 0 && got.LegitRejectRate != nil {
			figs = append(figs, figure{"legit_reject_rate", *got.LegitRejectRate, mine.LegitRejectRate()})
		}
		if mine.Attacker > 0 && got.AttackerAdmitRate != nil {
			figs = append(figs, figure{"attacker_admit_rate", *got.AttackerAdmitRate, mine.AttackerAdmitRate()})
		}
		if (mine.Legit > 0) != (got.LegitRejectRate != nil) || (mine.Attacker > 0) != (got.AttackerAdmitRate != nil) {
			return nil, fmt.Errorf("tune %s: re-checking %s: the run and the search disagree on which classes of request there are", o.input, c.Candidate)
		}
	}
	for _, f := range figs {
		if f.them != f.mine {
			return nil, fmt.Errorf("tune %s: re-checking %s: %s is %v by the search and %v by %s — a fault in rlsim's search; please report it",
				o.input, c.Candidate, f.name, f.mine, f.them, v.By)
		}
		v.Figures = append(v.Figures, f.name)
	}
	if check != nil && check.mismatch != "" {
		return nil, fmt.Errorf("tune %s: re-checking %s: %s", o.input, c.Candidate, check.mismatch)
	}
	return v, nil
}

// decisionCheck reads a replay's decisions as they are written and compares each with
// the search's decision for the same request.
type decisionCheck struct {
	w        *io.PipeWriter
	done     chan error
	s        *tune.Sample
	refused  []bool
	rows     int64
	mismatch string

	legitRefused, attackerAdmitted int64
}

func newDecisionCheck(s *tune.Sample, refused []bool) *decisionCheck {
	pr, pw := io.Pipe()
	d := &decisionCheck{w: pw, done: make(chan error, 1), s: s, refused: refused}
	go func() {
		r := csv.NewReader(pr)
		r.ReuseRecord = true
		header := true
		var err error
		for {
			var rec []string
			rec, err = r.Read()
			if err != nil {
				break
			}
			if header {
				header = false
				continue
			}
			i := d.rows
			d.rows++
			if i >= int64(len(refused)) || len(rec) < 5 {
				if d.mismatch == "" {
					d.mismatch = fmt.Sprintf("the replay decided more requests than the search (%d)", len(refused))
				}
				continue
			}
			allowed := rec[4] == "true"
			if allowed == refused[i] && d.mismatch == "" {
				d.mismatch = fmt.Sprintf("request %d (t_ns %s, key %s) is %s by the replay and not by the search", i+1, rec[0], rec[1],
					map[bool]string{true: "admitted", false: "refused"}[allowed])
			}
			switch att := s.Attacker(int(i)); {
			case att && allowed:
				d.attackerAdmitted++
			case !att && !allowed:
				d.legitRefused++
			}
		}
		if errors.Is(err, io.EOF) {
			err = nil
		}
		pr.CloseWithError(err)
		d.done <- err
	}()
	return d
}

func (d *decisionCheck) close() error {
	d.w.Close()
	return <-d.done
}

// command is the command line that tunes again as o did, for the chart's caption.
func (o *tuneOptions) command() string {
	parts := []string{"rlsim tune", o.input}
	for _, g := range o.goalsOf {
		parts = append(parts, "--goal", shellQuote(g.Text))
	}
	for _, r := range o.rules {
		parts = append(parts, "--attacker", shellQuote(r.Text))
	}
	var algs, products []string
	for _, f := range o.space.Families {
		if k := algorithms.Lookup(f); k != nil && len(k.Params) > 0 {
			products = append(products, f)
		} else {
			algs = append(algs, f)
		}
	}
	if len(algs) > 0 {
		parts = append(parts, "--algorithms", strings.Join(algs, ","))
	}
	if len(products) > 0 {
		parts = append(parts, "--products", strings.Join(products, ","))
	}
	parts = append(parts, "--key", strings.Join(o.keys, ","), "--window", o.windows)
	if o.limits != "" {
		parts = append(parts, "--limit", o.limits)
	}
	if o.bursts != "" {
		parts = append(parts, "--burst", o.bursts)
	}
	return strings.Join(parts, " ")
}

// verifyMinAgreement is the share of decisions a server running the recommendation must
// make as its model does for --verify to pass: what the real-server tests hold the
// models to, on arrivals a probe can only estimate.
const verifyMinAgreement = 0.99

// verifyServer sends the first --verify-for of the sample, keyed as the recommendation
// keys it, to the server at --verify, and judges every decision against the
// recommendation's model fed the arrivals the probe observed (probe --model's rule). A
// key of ip is sent from an address of its own per key (127.0.0.2 and on), an identity
// from the header the snippets read (X-User, X-Api-Key, X-Tenant, X-Account), a header
// key in its header; a server that decides under 99% as the model does fails the run.
func (o *tuneOptions) verifyServer(ctx context.Context, streams IO, s *tune.Sample, p *tune.Point) (*tune.Served, error) {
	u, err := checkProbeURL(ctx, o.verifyURL, o.allowRemote, p.Key == "ip")
	if err != nil {
		return nil, fmt.Errorf("--verify: %w", err)
	}
	tgt := probe.Target{URL: u.String(), Timeout: 10 * time.Second, Concurrency: 256, RefusedCodes: []int{429, 503}}
	switch {
	case p.Key == "ip":
		tgt.KeyAddrs = true
	case verifyHeaders[p.Key] != "":
		tgt.KeyHeader = verifyHeaders[p.Key]
	case strings.HasPrefix(p.Key, "header:"):
		tgt.KeyHeader = strings.TrimPrefix(p.Key, "header:")
	default:
		return nil, fmt.Errorf("--verify: the recommendation keys on %s, which a probe cannot send (it sends ip, user, api-key, tenant, account or header:NAME); narrow --key", p.Key)
	}
	arrivals := s.Span(p.Key, int64(o.verifyFor))
	if len(arrivals) == 0 {
		return nil, fmt.Errorf("--verify: the first %s of the traffic holds no request keyed by %s", o.verifyFor, p.Key)
	}
	var plan probe.Plan
	seen := map[string]bool{}
	for _, a := range arrivals {
		// Cost 1: a gateway counts requests, and the probe sends each request once.
		plan.Requests = append(plan.Requests, probe.Request{At: time.Duration(a.T - arrivals[0].T), Key: a.Key, Cost: 1})
		if !seen[a.Key] {
			seen[a.Key] = true
			plan.Keys = append(plan.Keys, a.Key)
		}
	}
	if tgt.KeyAddrs && len(plan.Keys) > probe.MaxKeyAddrs {
		return nil, fmt.Errorf("--verify: %d keys, more than the %d addresses of 127.0.0.0/8", len(plan.Keys), probe.MaxKeyAddrs)
	}
	clock := probe.WallClock{}
	start := clock.Now().Add(probeLead)
	fmt.Fprintf(streams.Err, "rlsim tune: --verify: sending %d requests (%d keys) over %s to %s, judged against %s\n",
		len(plan.Requests), len(plan.Keys), plan.Duration(), tgt.URL, p.Spec)
	ctx, stop := interruptible(ctx)
	defer stop()
	exchanges, err := probe.Run(ctx, plan, tgt, clock, start)
	if err != nil {
		return nil, interruption(ctx, err, fmt.Sprintf("--verify stopped after %d of %d requests", len(exchanges), len(plan.Requests)))
	}
	obs := probe.Observe(exchanges, start, tgt.RefusedCodes)
	if len(obs.Decisions) < len(exchanges) {
		return nil, fmt.Errorf("--verify: %d of %d requests got neither a 2xx nor a refusal (429, 503) from %s", len(exchanges)-len(obs.Decisions), len(exchanges), tgt.URL)
	}
	a, err := probe.Agree(obs, p.Spec, p.Policy())
	if err != nil {
		return nil, fmt.Errorf("--verify: %w", err)
	}
	v := &tune.Served{
		URL: tgt.URL, Span: o.verifyFor.String(), Requests: len(obs.Decisions), Keys: len(plan.Keys),
		Agreed: a.Agreed, WithinJitter: a.WithinJitter, Differ: a.Decisions - a.Agreed - a.WithinJitter,
		Agreement: a.Rate(), JitterMS: float64(obs.Jitter) / float64(time.Millisecond),
	}
	if v.Agreement < verifyMinAgreement {
		var first []string
		verdict := map[bool]string{true: "admitted", false: "refused"}
		for _, d := range a.Differences {
			if d.WithinJitter {
				continue
			}
			dec := obs.Decisions[d.Index]
			first = append(first, fmt.Sprintf("%s at +%s: the server %s, the model %s", dec.Key,
				time.Duration(dec.Arrival-start.UnixNano()).Round(time.Millisecond), verdict[d.Observed], verdict[d.Model]))
			if len(first) == 3 {
				break
			}
		}
		return nil, fmt.Errorf("--verify: %s decided only %s as %s keyed by %s does (%s): is that configuration what it runs?",
			tgt.URL, a, p.Spec, p.Key, strings.Join(first, "; "))
	}
	return v, nil
}

// verifyHeaders are the headers --verify sends an identity key in: those the snippets of
// gateway.Snippet read it from.
var verifyHeaders = map[string]string{"user": "X-User", "api-key": "X-Api-Key", "tenant": "X-Tenant", "account": "X-Account"}
