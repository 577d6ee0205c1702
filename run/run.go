// Package run runs a parsed scenario: it builds the scenario's traffic, feeds it through
// the event loop to every chosen algorithm — through passes, engines of layered limits,
// or fleets of nodes — has each decision measured against the exact reference, and
// returns the report. Commands, claims and sweeps call Run; nothing here reads a flag or
// writes a file, and the scenario package knows nothing of runs.
package run

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/scenario"
	"github.com/rlsim/rlsim/sim"
	"github.com/rlsim/rlsim/store"
	"github.com/rlsim/rlsim/traffic"
)

// Options change a run from what its scenario file says.
type Options struct {
	// Algorithms replaces the scenario's list when not empty.
	Algorithms []string
	// Limit, Window and Burst replace the policy's fields when non-zero.
	Limit  int64
	Window time.Duration
	Burst  int64
	// Seed replaces the scenario's seed when not nil.
	Seed *uint64
	// Decisions, when not nil, receives one CSV row per request and algorithm. The
	// algorithms then run one after the other, so the rows come grouped by algorithm.
	Decisions *DecisionWriter
	// Progress, when not nil, is told how far the run has come (see progress.go).
	Progress func(Progress)
	// Workers is how many algorithms' passes over the traffic may run at once; zero
	// means GOMAXPROCS. The results do not depend on it.
	Workers int
	// Memory asks for the report's memory section (what the run holds per key).
	Memory bool
	// Pipeline is how many decisions a fleet on a Redis store (miniredis or a real
	// server) holds and sends as one pipeline where no decision depends on an earlier
	// reply (see cluster.Fleet.Pipelines); 0 or 1 sends each call on its own, and more
	// than MaxPipeline is cut to it.
	Pipeline int
	// StoreStats, when not nil, is told what the runs sent to a Redis store.
	StoreStats *StoreStats
	// Store is how the runs talk to a Redis store (miniredis or a real server): the
	// round-trip timeout, and the watch a command reports a silent store from.
	Store store.Options
	// Own are limiters the user brings (a Lua script, a program), run after the
	// algorithms on open-loop traffic and, where they can be a fleet's shared script, on
	// the shared fleet variants of a cluster scenario. Closed-loop clients run the
	// built-ins only.
	Own []Maker
	// Context, when not nil, stops the run between two events once it is done: Run
	// returns the context's cause, after deleting what the run wrote on a Redis server.
	Context context.Context
}

// Policy is the policy a run of sc with these options uses.
func (o Options) Policy(sc *scenario.Scenario) algorithms.Policy {
	p := sc.Policy.Policy()
	if o.Limit != 0 {
		p.Limit = o.Limit
	}
	if o.Window != 0 {
		p.Window = o.Window
	}
	if o.Burst != 0 {
		p.Burst = o.Burst
	}
	return p
}

// Run runs every chosen algorithm over the scenario and measures each against the exact
// reference. Each algorithm gets its own event loop and its own RNG seeded alike, so
// open-loop traffic is the same request for request and the algorithms cannot disturb
// one another.
func Run(sc *scenario.Scenario, o Options) (*report.Report, error) {
	pol := o.Policy(sc)
	if err := pol.Validate(); err != nil {
		return nil, fmt.Errorf("scenario %s: policy: %w", sc.Name, err)
	}
	if o.Window != 0 {
		// The scenario checked its own windows against the clock; a window from the
		// command line is checked here, against the scenario's epoch and length.
		if err := sim.CheckRun(sc.EpochTime(), sc.Horizon(), o.Window); err != nil {
			return nil, fmt.Errorf("scenario %s with a window of %s: %w", sc.Name, o.Window, err)
		}
	}
	algs := sc.Algorithms
	if len(o.Algorithms) > 0 {
		algs = o.Algorithms
	}
	if len(algs) == 0 {
		algs = algorithms.Defaults()
	}
	seed := sc.SeedOr(scenario.DefaultSeed)
	if o.Seed != nil {
		seed = *o.Seed
	}
	layers := layerPolicies(sc, o)
	rep := &report.Report{
		Scenario:    sc.Name,
		Description: sc.Description,
		Seed:        seed,
		Policy:      report.Policy{Limit: pol.Limit, Window: report.Duration(pol.Window), Burst: pol.EffectiveBurst()},
		Key:         sc.Key,
	}
	if sc.Cluster != nil {
		if err := runFleets(sc, rep, pol, layers, algs, seed, o); err != nil {
			return nil, err
		}
		return rep, nil
	}
	if len(sc.Limits) > 0 {
		first := layers[0].Policy()
		rep.Policy = report.Policy{Limit: first.Limit, Window: report.Duration(first.Window), Burst: first.EffectiveBurst()}
		var keys []string
		for _, l := range layers {
			keys = append(keys, l.Name+"="+l.Key)
		}
		rep.Key = strings.Join(keys, "+")
	}
	if sc.Clients == nil || len(sc.Traffic) > 0 { // a clients-only scenario has no open-loop traffic to measure
		var err error
		if plainKeys(sc) {
			err = runPlain(sc, rep, algs, pol, seed, o)
		} else {
			err = runEngines(sc, rep, algs, layers, seed, o)
		}
		if err != nil {
			return nil, err
		}
	}
	if sc.Clients != nil {
		retries, err := runClients(o.Context, sc, pol, algs, seed)
		if err != nil {
			return nil, err
		}
		rep.Retries = retries
		if rep.Results == nil {
			rep.Results = []report.Result{} // "results": [] rather than null in JSON
		}
	}
	return rep, nil
}

// sinkFeeder keeps one pending request of a source on the event loop and hands each to
// sink when it is due.
type sinkFeeder struct {
	src  traffic.Source
	req  traffic.Request
	sink func(*traffic.Request)
}

func (f *sinkFeeder) Fire(l *sim.Loop) {
	f.sink(&f.req)
	if f.src.Next(&f.req) {
		l.At(f.req.At, f)
	}
}

// feedAll builds the scenario's traffic from seed and puts each source's first request
// on loop, each to be handed to sink when due.
func feedAll(sc *scenario.Scenario, seed uint64, loop *sim.Loop, sink func(*traffic.Request)) {
	for _, src := range sc.Sources(sim.NewRNG(seed, sim.RunStream)) {
		f := &sinkFeeder{src: src, sink: sink}
		if src.Next(&f.req) {
			loop.At(f.req.At, f)
		}
	}
}

func runOne(ctx context.Context, sc *scenario.Scenario, b builder, layers []scenario.LimitSpec, seed uint64, dec *DecisionWriter, progress *progressCounter) (report.Result, error) {
	return runOneWith(ctx, sc, b, layers, seed, dec, progress, nil)
}

// runOneWith is runOne with the single limit decided by fleet instead of a limiter of its
// own, when fleet is not nil; the fleet learns each key's name when it is first seen.
func runOneWith(ctx context.Context, sc *scenario.Scenario, b builder, layers []scenario.LimitSpec, seed uint64, dec *DecisionWriter, progress *progressCounter, fleet namedLimiter) (report.Result, error) {
	var loop sim.Loop
	eng, err := newEngine(sc, b, layers, len(sc.Limits) > 0, fleet)
	if err != nil {
		return report.Result{}, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	defer eng.finish()
	eng.recordTimeline(sc.Horizon())
	// A fleet's rows read "<algorithm>@<variant>", so variants in one file stay apart.
	label := b.name
	if f, ok := fleet.(interface{ Name() string }); ok {
		label = f.Name()
	}
	if lim, ok := eng.layers[0].cells[0].lim.(aheadLimiter); ok && len(eng.layers) == 1 && len(eng.layers[0].cells) == 1 && fleet == nil {
		err = runEngineAhead(ctx, sc, eng, lim, label, seed, dec, progress)
	} else {
		var writeErr error
		feedAll(sc, seed, &loop, func(r *traffic.Request) {
			allowed, key, ref := eng.decide(r)
			progress.count(r.At)
			if dec != nil && writeErr == nil {
				writeErr = dec.write(sc.Name, label, r, key.String(), allowed, ref)
			}
		})
		err = loop.RunContext(ctx, sc.Horizon())
		if err == nil && writeErr != nil {
			err = fmt.Errorf("writing decisions: %w", writeErr)
		}
	}
	if ferr := eng.finish(); err == nil && ferr != nil {
		err = fmt.Errorf("scenario %s: %w", sc.Name, ferr)
	}
	if err != nil {
		return report.Result{}, err
	}
	return eng.result(b.name), nil
}
