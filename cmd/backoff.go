package cmd

import (
	"bytes"
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlsim/rlsim/backoff"
	"github.com/rlsim/rlsim/render"
	"github.com/rlsim/rlsim/render/chart"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/traffic"
)

type backoffOptions struct {
	*globalOptions
	model       string
	clients     string
	runs        int
	strategies  []string
	base, cap   time.Duration
	retryAfter  string
	bin         time.Duration
	maxAttempts int
	deadline    time.Duration
	series      string
	workers     int
	rl          rateLimitedFlags
	strategy    strategyFlags
	// reproduce are the flags the user set that shape the results, for chart captions.
	reproduce []string
}

func newBackoffCmd(g *globalOptions, streams IO) *cobra.Command {
	o := &backoffOptions{globalOptions: g}
	c := &cobra.Command{
		Use:   "backoff",
		Short: "Compare client retry strategies: calls, time to finish, and the waves they make",
		Long: `backoff runs many closed-loop clients that retry with each strategy against a server
model and averages the runs.

  occ           Brooker's optimistic-concurrency experiment ("Exponential Backoff And
                Jitter", AWS Architecture Blog, 2015): N clients start together, read a row's
                version and write it back; a write succeeds only if nobody wrote in between.
                Hops take |Normal(10ms, 2ms)|; calls are the write calls.
  rate-limited  clients against an API guarded by one of rlsim's limiters, with a hiccup
                (a window of 503s or slowness) that makes them all fail at once, and an
                optional --error-mix of 503s and 4xx.
  overload      a backend of finite --capacity and no limiter, met by clients starting
                over --spread (default 15000 clients over 10s, 1.5x its capacity); above
                capacity each attempt fails with probability 1 - capacity/load, so retries
                feed the storm. amplification = server calls / client requests.

--clients takes one count, a list (10,50,100) or a sweep A..B/STEP (10..190/10).

A strategy is a backoff shape, which chooses each sleep, optionally followed by policies
that decide whether an attempt may be sent at all: SHAPE[+POLICY...], for example
full-jitter+retry-budget or exponential+retry-quota+adaptive. A policy named alone means
full-jitter+POLICY. Shapes (base b, cap c, n-th failure, v = min(c, b*2^n)):
  none, constant (b), linear (min(c, b*n)), exponential (v), full-jitter ([0, v)),
  equal-jitter (v/2 + [0, v/2)), decorrelated-jitter, proportional-jitter (v +- --jitter)
Policies (rate-limited and overload models; one state per client process, see --processes):
  retry-budget     retries <= --budget-min/s x --budget-ttl (the reserve) plus
                   --budget-ratio x recent requests (Finagle's RetryBudget)
  retry-throttle   a token count: failures take 1, successes give --throttle-token-ratio
                   back; retries only above half of --throttle-max-tokens (gRPC A6)
  retry-quota      retries cost --quota-retry-cost units of --quota-capacity, refunded
                   on success, at most --quota-max-attempts a request (AWS SDKs'
                   standard mode)
  adaptive         a client-side token bucket, cut on 429s (and 503s with Retry-After),
                   regrown along a cubic; paces first tries too (AWS SDKs' adaptive mode)
  circuit-breaker  closed/open/half-open on the failure share of the last
                   --breaker-window outcomes; open refuses every attempt; every trial
                   must pass to close
  sre-throttle     refuses attempts itself with probability (requests - K x accepts) /
                   (requests + 1) over --sre-window (the SRE book's client-side
                   adaptive throttling, K = --sre-k)
  resilience4j-breaker
                   resilience4j's CircuitBreaker: failure rate over the last --r4j-window
                   calls once --r4j-min-calls were seen; half-open lets
                   --r4j-half-open-calls through and closes below the rate
A withheld attempt ends its client's job as a give-up.

peak_arrivals is the herd: the most retries (every attempt after the first try of a
request) reaching the server in one --bin, averaged over runs. First tries are not
counted (in the occ and rate-limited models they all leave together by premise), so the
figure is what the strategy made of the failure: tall for exponential backoff, whose
clients stay in lockstep, low for full jitter.

With --charts (default svg) and --out (default out/), the command also draws
DIR/backoff-MODEL/: backoff.{svg,png}, calls and completion time against clients per
strategy (for a sweep of two or more client counts), and herd.{svg,png}, the retries
per bin over time per strategy (the first run at the largest client count), and
load.{svg,png}, every attempt and the retries per bin, one panel per strategy.

The table shows calls (amp, server calls / client requests, for overload), each client's
time to finish (p50, p99, max, in seconds), the herd (peak), wasted calls, jobs given up
and work done twice, and says which strategy made the fewest calls, drained fastest (the time the
last client finished) and made the gentlest peak; --format json or csv carries every
figure.`,
		Example: `  # Brooker's experiment: 100 clients, every strategy, the mean of 100 runs
  rlsim backoff

  # calls and time to finish against the number of clients, charted under out/backoff-occ/
  rlsim backoff --clients 10..100/10 --runs 10 --charts png,svg

  # a herd against a rate-limited API after a hiccup, Retry-After ignored
  rlsim backoff --model rate-limited --clients 200 --strategies exponential,full-jitter --retry-after ignore

  # policies that protect the server: a retry budget and adaptive throttling beside full jitter
  rlsim backoff --model rate-limited --strategies full-jitter,constant,retry-budget,adaptive --runs 2`,
		Args: argCount(0, 0),
		RunE: func(c *cobra.Command, _ []string) error {
			if o.model == "overload" {
				if !c.Flags().Changed("runs") {
					o.runs = 10
				}
				if !c.Flags().Changed("clients") {
					o.clients = "15000"
				}
				if !c.Flags().Changed("base") {
					o.base = 100 * time.Millisecond
				}
				if !c.Flags().Changed("cap") {
					o.cap = 10 * time.Second
				}
				if !c.Flags().Changed("bin") {
					o.bin = backoff.DefaultOverload.Bin
				}
				if !c.Flags().Changed("spread") {
					o.rl.spread = backoff.DefaultOverload.Spread
				}
			}
			for name, models := range serverFlags {
				if c.Flags().Changed(name) && !slices.Contains(models, o.model) {
					return usagef("--%s: applies to --model %s, not %s", name, strings.Join(models, " and "), o.model)
				}
			}
			if o.model == "rate-limited" {
				// The storm of the notes plays out over seconds, not milliseconds, and
				// a thousand clients make it; these defaults set that scale.
				if !c.Flags().Changed("runs") {
					o.runs = 20
				}
				if !c.Flags().Changed("clients") {
					o.clients = "1000"
				}
				if !c.Flags().Changed("base") {
					o.base = 500 * time.Millisecond
				}
				if !c.Flags().Changed("cap") {
					o.cap = 30 * time.Second
				}
			}
			o.reproduce = reproducingFlags(c.Flags())
			return runBackoff(c.Context(), o, streams)
		},
	}
	f := c.Flags()
	f.StringVar(&o.model, "model", "occ", "server model: occ, rate-limited or overload")
	f.StringVar(&o.clients, "clients", "100", "client count: N, a list N,M,.. or a sweep A..B/STEP; 1000 for rate-limited, 15000 for overload, unless set")
	f.IntVar(&o.runs, "runs", 100, "runs averaged per strategy and client count; 20 for rate-limited, 10 for overload, unless set")
	f.StringSliceVar(&o.strategies, "strategies", nil, "strategies, comma-separated: SHAPE[+POLICY...] or POLICY (= full-jitter+POLICY); shapes "+strings.Join(traffic.ShapeNames, ", ")+"; policies "+strings.Join(traffic.PolicyNames, ", ")+" (default: "+strings.Join(traffic.BackoffNames, ", ")+")")
	f.DurationVar(&o.base, "base", 5*time.Millisecond, "backoff base; 500ms for rate-limited, 100ms for overload, unless set")
	f.DurationVar(&o.cap, "cap", 2*time.Second, "backoff cap; 30s for rate-limited, 10s for overload, unless set")
	f.StringVar(&o.retryAfter, "retry-after", "honor", "honor or ignore the server's Retry-After (rate-limited and overload models)")
	f.DurationVar(&o.bin, "bin", 10*time.Millisecond, "bin width of peak_arrivals: the most retries (attempts after a request's first try) reaching the server in one bin; 100ms for overload unless set")
	f.IntVar(&o.maxAttempts, "max-attempts", 0, "attempts per request before a client gives up (0: no limit)")
	f.DurationVar(&o.deadline, "deadline", 0, "time a job may take before its client gives up (0: none)")
	f.StringVar(&o.series, "series", "", "write the first run's attempts and arrivals (retries) per bin as CSV to this file")
	o.rl.register(f)
	o.strategy.register(f)
	f.IntVar(&o.workers, "workers", 0, "runs simulated at once (default: one per CPU; results do not depend on it)")
	g.addFormatFlag(c, allFormats...)
	g.addOutFlags(c)
	g.addSeedFlag(c)
	return c
}

// parseClients reads "100", "10,50,100" or "10..190/10".
func parseClients(s string) ([]int, error) {
	bad := func() ([]int, error) {
		return nil, usagef("--clients: want N, a list N,M,.. or a sweep A..B/STEP of positive counts, got %q", s)
	}
	if from, rest, ok := strings.Cut(s, ".."); ok {
		to, step, ok := strings.Cut(rest, "/")
		if !ok {
			step = "1"
		}
		a, err1 := strconv.Atoi(from)
		b, err2 := strconv.Atoi(to)
		st, err3 := strconv.Atoi(step)
		if err1 != nil || err2 != nil || err3 != nil || a < 1 || b < a || st < 1 {
			return bad()
		}
		if (b-a)/st >= 10000 {
			return nil, usagef("--clients: %q makes more than 10000 points", s)
		}
		var out []int
		for n := a; n <= b; n += st {
			out = append(out, n)
		}
		return out, nil
	}
	var out []int
	for _, part := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || n < 1 {
			return bad()
		}
		out = append(out, n)
	}
	return out, nil
}

// maxClients bounds one run so that a typo does not ask for a billion clients.
const maxClients = 1_000_000

func (o *backoffOptions) experiment() (backoff.Experiment, error) {
	e := backoff.Experiment{Runs: o.runs, Seed: 1, Workers: o.workers, KeepSeries: o.series != ""}
	if o.seedSet {
		e.Seed = o.seed
	}
	clients, err := parseClients(o.clients)
	if err != nil {
		return e, err
	}
	if slices.Max(clients) > maxClients {
		return e, usagef("--clients: at most %d clients per run", maxClients)
	}
	e.Clients = clients
	if o.runs < 1 || o.runs > 100000 {
		return e, usagef("--runs: must be between 1 and 100000, got %d", o.runs)
	}
	if o.base <= 0 {
		return e, usagef("--base: must be positive, got %s", o.base)
	}
	if o.cap < o.base {
		return e, usagef("--cap: must be at least --base (%s), got %s", o.base, o.cap)
	}
	if o.bin <= 0 {
		return e, usagef("--bin: must be positive, got %s", o.bin)
	}
	if o.maxAttempts < 0 {
		return e, usagef("--max-attempts: must not be negative, got %d", o.maxAttempts)
	}
	if o.deadline < 0 {
		return e, usagef("--deadline: must not be negative, got %s", o.deadline)
	}
	if o.retryAfter != "honor" && o.retryAfter != "ignore" {
		return e, usagef("--retry-after: want honor or ignore, got %q", o.retryAfter)
	}
	names := o.strategies
	if len(names) == 0 {
		names = traffic.BackoffNames
	}
	cfg, err := o.strategy.config(o.base, o.cap)
	if err != nil {
		return e, err
	}
	seen := map[string]bool{}
	for _, n := range names {
		s, err := traffic.ParseStrategy(n, cfg)
		if err != nil {
			return e, usagef("--strategies: %v", err)
		}
		if seen[s.Name()] {
			return e, usagef("--strategies: %s is listed twice", s.Name())
		}
		seen[s.Name()] = true
		if o.model == "occ" && len(s.Policies) > 0 {
			return e, usagef("--strategies: %s: policies read the server's answers; use them with --model rate-limited or overload", s.Name())
		}
		e.Strategies = append(e.Strategies, s)
	}
	switch o.model {
	case "occ":
		m := backoff.DefaultOCC
		m.Bin, m.MaxAttempts, m.Deadline = o.bin, o.maxAttempts, o.deadline
		e.Model = m
	case "rate-limited":
		m, err := o.rl.model(o)
		if err != nil {
			return e, err
		}
		e.Model = m
	case "overload":
		m, err := o.rl.overload(o)
		if err != nil {
			return e, err
		}
		e.Model = m
	default:
		return e, usagef("--model: unknown model %q (want %s)", o.model, strings.Join(backoff.Models, " or "))
	}
	return e, nil
}

func runBackoff(ctx context.Context, o *backoffOptions, streams IO) error {
	formats, err := parseCharts(o.charts)
	if err != nil {
		return err
	}
	if o.out == "" {
		formats = nil
	}
	e, err := o.experiment()
	if err != nil {
		return err
	}
	// The herd chart draws the first run's series.
	e.KeepSeries = e.KeepSeries || len(formats) > 0
	ctx, stop := interruptible(ctx)
	defer stop()
	e.Context = ctx
	results, err := e.Run()
	if err != nil {
		return interruption(ctx, err)
	}
	rep := backoff.Report{
		Model: o.model, Seed: e.Seed, Base: report.Duration(o.base), Cap: report.Duration(o.cap),
		Bin: report.Duration(o.bin), Setup: e.Model.String(), Results: results,
	}
	if o.model != "occ" {
		rep.RetryAfter = o.retryAfter
		rep.Processes = o.rl.processes
	}
	rep.Verdicts = backoff.Verdicts(results)
	// Render everything before writing anything: a failure leaves no file behind.
	var outs outputSet
	defer outs.discard()
	if o.series != "" {
		var series bytes.Buffer
		if err := backoff.WriteSeries(&series, o.bin, results); err != nil {
			return err
		}
		if err := outs.add(o.series, series.Bytes()); err != nil {
			return err
		}
	}
	capacity := 0.0
	if o.model == "overload" {
		capacity = o.rl.capacity
	}
	return writeResults(&outs, streams.Out, destination{o.format, o.out, formats}, output{
		JSON:  rep,
		CSV:   tableCSV(rep.MachineTable()),
		Human: humanTables(rep.Table()),
		Figures: func() ([]*chart.Figure, error) {
			return render.BackoffFigures(rep, o.runs, capacity, backoffCommand(o, rep.Seed)), nil
		},
		FigureDir: "backoff-" + o.model,
	})
}
