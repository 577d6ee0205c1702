package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/probe"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/scenario"
	"github.com/rlsim/rlsim/server"
)

type probeOptions struct {
	*globalOptions
	scenario        string
	limit           int64
	window          time.Duration
	burst           int64
	model           string
	identify        bool
	decisions       string
	timeScale       float64
	keyHeader       string
	keyAddr         bool
	costHeader      string
	refusedCodes    []int
	honorRetryAfter bool
	maxRetryWait    time.Duration
	timeout         time.Duration
	concurrency     int
	maxRequests     int
	allowRemote     bool
	align           bool
	serverLog       string
	serverLogFormat string
	// clock replaces the wall clock (tests).
	clock probe.Clock
}

// probeLead is how far ahead of now the first request is scheduled, so the plan's first
// instants are not already late when the sender starts.
const probeLead = 200 * time.Millisecond

func newProbeCmd(g *globalOptions, streams IO) *cobra.Command {
	o := &probeOptions{globalOptions: g}
	c := &cobra.Command{
		Use:   "probe URL",
		Short: "Send a scenario's traffic to a live HTTP endpoint in real time and judge its limiter",
		Long: `probe sends the requests of a scenario (--scenario NAME|FILE, a built-in or a file such
as those worst-case --schedule-out writes) to URL with GET, at the scenario's times divided
by --time-scale, on the wall clock. It counts 2xx as admitted and --refused-codes as
refused, and measures the endpoint against the promise of --limit per --window with the
same exact reference as every simulation, judged on the times the requests were sent,
and gives the promise's verdict on their estimated arrivals (send time + half the least
round trip), each known to within the jitter measured: kept, broke, or within jitter. It
also holds the endpoint's RateLimit / RateLimit-* / X-RateLimit-* headers to what happened
next, and with --honor-retry-after retries each refusal once when its Retry-After says.

--model SPEC (any spec of rlsim algorithms; a textbook algorithm takes --limit, --window and
--burst) replays the arrivals through that model and compares decision by decision.
--identify searches the catalogue for the configurations that reproduce the endpoint and
prints the best. --decisions FILE writes one CSV row per request (docs/probe.md).

It prints what it will send before sending, sends nothing else, and stops by itself. URL
must be on loopback unless --allow-remote. Keys reach the target in a header
(--key-header) or as one source address per key on 127.0.0.0/8 (--key-addr).`,
		Example: `  # in one terminal, a fixed window of 100 per second keyed on X-User:
  #   rlsim serve --algorithm fixed-window --limit 100 --window 1s --key header:X-User
  # in another, the boundary burst played 60 times faster (its minute becomes a second):
  rlsim probe http://127.0.0.1:8080/ --scenario boundary-burst --time-scale 60 --key-header X-User
  # nginx behind /api/ judged against its model, named from what it did, decisions kept:
  rlsim probe http://127.0.0.1:8080/api/ --scenario probe-identify.yaml --key-header X-User --model 'nginx:rate=10r/s burst=20 nodelay' --identify --decisions d.csv`,
		Args: argCount(1, 1),
		RunE: func(c *cobra.Command, args []string) error {
			return runProbe(c.Context(), o, args[0], streams)
		},
	}
	f := c.Flags()
	f.StringVar(&o.scenario, "scenario", "", "scenario whose traffic to send: a built-in name or a file (required)")
	f.Var(unitsValue{&o.limit}, "limit", "declared limit: units per window the endpoint promises (default: the scenario's)")
	f.Var(windowValue{&o.window}, "window", "declared window, in real time (default: the scenario's divided by --time-scale)")
	f.Var(unitsValue{&o.burst}, "burst", "the burst of a bucket algorithm given to --model (default: --limit)")
	f.StringVar(&o.model, "model", "", "judge the endpoint decision by decision against this model (a spec)")
	f.BoolVar(&o.identify, "identify", false, "search the catalogue for the models that reproduce the endpoint")
	f.StringVar(&o.decisions, "decisions", "", "write one CSV row per request to this file")
	f.Float64Var(&o.timeScale, "time-scale", 1, "divide the scenario's times by this (60 plays a minute in a second)")
	f.StringVar(&o.keyHeader, "key-header", "", "send each request's key in this header (for example X-User)")
	f.BoolVar(&o.keyAddr, "key-addr", false, "send each key from its own source address, 127.0.0.2 and on (targets keyed by IP)")
	f.StringVar(&o.costHeader, "cost-header", "", "send each request's cost in this header (without it every request counts 1)")
	f.IntSliceVar(&o.refusedCodes, "refused-codes", []int{429}, "statuses that mean refused")
	f.BoolVar(&o.honorRetryAfter, "honor-retry-after", false, "retry each refusal once, when its Retry-After says, and report whether it passed")
	f.DurationVar(&o.maxRetryWait, "max-retry-wait", 10*time.Second, "with --honor-retry-after: longest Retry-After honoured")
	f.DurationVar(&o.timeout, "timeout", 10*time.Second, "longest wait for one response")
	f.IntVar(&o.concurrency, "concurrency", 256, "most requests in flight at once")
	f.IntVar(&o.maxRequests, "max-requests", 100_000, "refuse a plan of more requests than this")
	f.BoolVar(&o.allowRemote, "allow-remote", false, "allow a URL that is not on loopback")
	f.StringVar(&o.serverLog, "server-log", "", "judge on the arrival times in the server's access log written during the probe (each request tagged in "+probe.TagHeader+"; docs/probe.md)")
	f.StringVar(&o.serverLogFormat, "server-log-format", "nginx", "with --server-log: nginx (log_format '"+probe.DefaultNginxLogFormat+"'), an nginx log_format, haproxy or haproxy:N (the tag the N-th captured header)")
	f.BoolVar(&o.align, "align", true, "start where a window of --window would split the traffic as the scenario's epoch splits it (targets that align windows on Unix time)")
	g.addFormatFlag(c, allFormats...)
	g.addSeedFlag(c)
	return c
}

func runProbe(ctx context.Context, o *probeOptions, target string, streams IO) error {
	if err := o.validate(); err != nil {
		return err
	}
	u, err := checkProbeURL(ctx, target, o.allowRemote, o.keyAddr)
	if err != nil {
		return err
	}
	sc, err := loadScenario(o.scenario)
	if err != nil {
		return err
	}
	pol := sc.Policy.Policy()
	if o.limit > 0 {
		pol.Limit = o.limit
	}
	window := o.window
	if window == 0 {
		window = time.Duration(float64(pol.Window) / o.timeScale)
		if window <= 0 {
			return usagef("--time-scale: %g shrinks the scenario's window %s below a nanosecond", o.timeScale, pol.Window)
		}
	}
	declared := algorithms.Policy{Limit: pol.Limit, Window: window}
	modelPolicy := declared
	modelPolicy.Burst = o.burst
	if o.model != "" {
		if _, err := probe.Agree(probe.Observed{}, o.model, modelPolicy); err != nil {
			return usagef("--model: %v", err)
		}
	}
	seed := sc.SeedOr(scenario.DefaultSeed)
	if o.seedSet {
		seed = o.seed
	}
	alignWindow := time.Duration(0)
	if o.align {
		alignWindow = window
	}
	plan, err := probe.FromScenario(sc, seed, o.timeScale, alignWindow, o.maxRequests)
	if errors.Is(err, probe.ErrTooManyRequests) {
		return usagef("--max-requests: scenario %s sends more than %d requests; raise --max-requests if you mean it", sc.Name, o.maxRequests)
	}
	if err != nil {
		return err
	}
	if len(plan.Requests) == 0 {
		return fmt.Errorf("scenario %s: no requests to send", sc.Name)
	}
	if len(plan.Keys) > 1 && o.keyHeader == "" && !o.keyAddr {
		return usagef("scenario %s has %d keys: say how the target tells them apart with --key-header NAME or --key-addr", sc.Name, len(plan.Keys))
	}
	if o.keyAddr && len(plan.Keys) > probe.MaxKeyAddrs {
		return usagef("--key-addr: scenario %s has %d keys, more than the %d addresses of 127.0.0.0/8", sc.Name, len(plan.Keys), probe.MaxKeyAddrs)
	}
	if o.costHeader == "" {
		for i := range plan.Requests {
			plan.Requests[i].Cost = 1 // the target counts what it is told: one request each
		}
	}

	clock := o.clock
	if clock == nil {
		clock = probe.WallClock{}
	}
	now := clock.Now()
	start := plan.Start(now.Add(probeLead), alignWindow)
	tgt := probe.Target{
		URL: u.String(), KeyHeader: o.keyHeader, KeyAddrs: o.keyAddr, CostHeader: o.costHeader,
		Timeout: o.timeout, Concurrency: o.concurrency, HonorRetryAfter: o.honorRetryAfter,
		MaxRetryWait: o.maxRetryWait, RefusedCodes: o.refusedCodes,
	}
	var serverLog *probe.ServerLog
	if o.serverLog != "" {
		if serverLog, err = probe.OpenServerLog(o.serverLog, o.serverLogFormat, true); err != nil {
			return usagef("--server-log %s: %v", o.serverLog, err)
		}
		tgt.Tag = probe.RunTag(start)
	}

	costs := "every request counts 1"
	if o.costHeader != "" {
		costs = "cost in header " + o.costHeader
	}
	fmt.Fprintf(streams.Err, "rlsim probe: sending %d requests (%d key(s)) over %s to %s — scenario %s, seed %d, time scale %g, %s, %s; judged against %d per %s on the times sent; first request in %s\n",
		len(plan.Requests), len(plan.Keys), plan.Duration(), tgt.URL, sc.Name, seed, o.timeScale, tgt, costs,
		declared.Limit, declared.Window, start.Sub(now).Round(time.Millisecond))
	if o.honorRetryAfter {
		fmt.Fprintf(streams.Err, "rlsim probe: and at most one retry per refusal, when its Retry-After (up to %s) says\n", o.maxRetryWait)
	}

	// The decisions file is staged before anything is sent, so a path that cannot be
	// written fails the probe before it sends a request.
	var outs outputSet
	defer outs.discard()
	var decisionsFile io.Writer
	if o.decisions != "" {
		if decisionsFile, err = outs.create(o.decisions); err != nil {
			return fmt.Errorf("--decisions: %w", err)
		}
	}

	ctx, stop := interruptible(ctx)
	defer stop()
	exchanges, err := probe.Run(ctx, plan, tgt, clock, start)
	if err != nil {
		return interruption(ctx, err, fmt.Sprintf("stopped after %d of %d requests, judged none", len(exchanges), len(plan.Requests)))
	}
	res := probe.Judge(exchanges, declared, o.refusedCodes)
	if res.Other > 0 {
		fmt.Fprintf(streams.Err, "rlsim probe: warning: %d request(s) got no verdict (statuses %s)%s\n", res.Other, statusList(res.OtherStatuses), firstError(res.FirstError))
	}
	obs := probe.Observe(exchanges, start, o.refusedCodes)
	var logMatch *probe.LogMatch
	if serverLog != nil {
		var m probe.LogMatch
		if obs, m, err = serverLog.Match(ctx, clock, obs, tgt.Tag); err != nil {
			return err
		}
		logMatch = &m
		fmt.Fprintf(streams.Err, "rlsim probe: --server-log: %s\n", m)
	}
	result := probe.TargetReport{ServerLog: logMatch, Target: tgt.URL, Result: res, OneWayMS: probe.Millis(obs.OneWay), Promise: probe.JudgePromise(obs, declared)}
	// modelAllowed is the decision of the model the decisions file shows: --model's, or
	// the best --identify found.
	var modelAllowed []bool
	if o.model != "" {
		a, err := probe.Agree(obs, o.model, modelPolicy)
		if err != nil {
			return err
		}
		result.SetModel(a, obs, start.UnixNano())
		modelAllowed = a.Model
	}
	if o.identify {
		found, _, err := probe.Identify(obs, identifyBest)
		switch {
		case errors.Is(err, probe.ErrNothingRefused):
			fmt.Fprintf(streams.Err, "rlsim probe: --identify: %v\n", err)
		case err != nil:
			return err
		default:
			result.Identified = probe.IdentifiedOf(found)
			if modelAllowed == nil {
				modelAllowed = found[0].Agreement.Model
			}
		}
	}
	policy := probe.ReportPolicy{Limit: declared.Limit, Window: report.Duration(declared.Window), Burst: o.burst}
	rep := probe.Report{
		Target: tgt.URL, Scenario: sc.Name, Seed: seed, Policy: policy,
		TimeScale: o.timeScale, KeyedBy: tgt.String(), JudgedOn: "send times",
		Results: []probe.TargetReport{result},
	}
	if decisionsFile != nil {
		if err := probe.WriteDecisions(decisionsFile, exchanges, start, obs, modelAllowed, result.Promise); err != nil {
			return fmt.Errorf("--decisions %s: %w", o.decisions, err)
		}
	}
	return writeResults(&outs, streams.Out, destination{format: o.format}, probeOutput(rep, o.honorRetryAfter))
}

// identifyBest is how many configurations --identify prints.
const identifyBest = 5

func (o *probeOptions) validate() error {
	switch {
	case o.scenario == "":
		return usagef("--scenario: required (a built-in name or a scenario file)")
	case o.limit < 0:
		return usagef("--limit: must be positive, got %d", o.limit)
	case o.window < 0:
		return usagef("--window: must be positive, got %s", o.window)
	case !(o.timeScale > 0 && o.timeScale <= probe.MaxScale):
		return usagef("--time-scale: must be more than 0 and at most %g, got %g", float64(probe.MaxScale), o.timeScale)
	case o.keyHeader != "" && o.keyAddr:
		return usagef("--key-header and --key-addr: choose one way to send keys")
	case o.timeout <= 0:
		return usagef("--timeout: must be positive, got %s", o.timeout)
	case o.concurrency < 1:
		return usagef("--concurrency: must be at least 1, got %d", o.concurrency)
	case o.maxRequests < 1:
		return usagef("--max-requests: must be at least 1, got %d", o.maxRequests)
	case o.maxRetryWait < 0:
		return usagef("--max-retry-wait: must not be negative, got %s", o.maxRetryWait)
	case len(o.refusedCodes) == 0:
		return usagef("--refused-codes: name at least one status")
	}
	for _, c := range o.refusedCodes {
		if c < 300 || c > 599 {
			return usagef("--refused-codes: %d is not a status from 300 to 599", c)
		}
	}
	for flag, name := range map[string]string{"--key-header": o.keyHeader, "--cost-header": o.costHeader} {
		if name != "" {
			if err := server.ParseHeaderName(name); err != nil {
				return usagef("%s: %v", flag, err)
			}
		}
	}
	return nil
}

// checkProbeURL parses target and keeps it on loopback unless allowRemote: a name must
// resolve to loopback addresses only. --key-addr needs loopback whatever allowRemote says.
func checkProbeURL(ctx context.Context, target string, allowRemote, keyAddr bool) (*url.URL, error) {
	u, err := url.Parse(target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usagef("URL: want http://HOST[:PORT]/PATH, got %q", target)
	}
	host := u.Hostname()
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		if ctx == nil {
			ctx = context.Background()
		}
		addrs, err = net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, usagef("URL: cannot resolve %s: %v", host, err)
		}
	}
	for _, a := range addrs {
		if a.Unmap().IsLoopback() {
			continue
		}
		if keyAddr {
			return nil, usagef("--key-addr: sends from 127.0.0.0/8, which reaches only a target on loopback; %s is %s", host, a)
		}
		if !allowRemote {
			return nil, usagef("URL: %s is %s, not on loopback; probing another machine sends it real traffic: add --allow-remote if you mean it", host, a)
		}
	}
	return u, nil
}

func statusList(m map[int]int64) string {
	codes := make([]int, 0, len(m))
	for c := range m {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	parts := make([]string, len(codes))
	for i, c := range codes {
		name := strconv.Itoa(c)
		if c == 0 {
			name = "none"
		}
		parts[i] = fmt.Sprintf("%s×%d", name, m[c])
	}
	return strings.Join(parts, ", ")
}

func firstError(e string) string {
	if e == "" {
		return ""
	}
	return "; first error: " + e
}

// probeOutput is the output of a probe: its report, tables and CSV row; retries says
// whether refusals were retried on their Retry-After (the headers table checks them).
func probeOutput(rep probe.Report, retries bool) output {
	return output{JSON: rep, CSV: rep.WriteCSV, Human: humanTables(rep.Tables(retries)...)}
}
