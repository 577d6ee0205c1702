package run

import (
	"fmt"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/internal/pool"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/scenario"
)

// A run takes one of two paths. Plain scenarios — one limit keyed on a name, traffic from
// plain generators only (scenario.GeneratorKind.Plain: script, poisson), nothing
// recorded — go through
// passes (pass.go): key names become
// integer ids without hashing where a generator numbers its keys, and one walk over the
// traffic serves a group of algorithms. Everything else (identities and address keys,
// layered limits, generated actors, fleets) goes through an engine per algorithm
// (engine.go). Both measure with the same collector and give the same results on a plain
// scenario (TestPlainPathEqualsEnginePath).

// nameKinds are the keys a plain run reads straight from a request's key name.
var nameKinds = map[string]bool{"user": true, "account": true, "tenant": true, "api-key": true, "route": true}

// plainKeys reports whether the scenario can take the plain path. (A replayed log is not a
// scenario: it has a pass of its own, replay.go, keyed by the log's identities.)
func plainKeys(s *scenario.Scenario) bool {
	if forceEngine || len(s.Limits) > 0 || s.Cluster != nil || s.Proxies > 0 || !nameKinds[s.Key] {
		return false
	}
	for _, t := range s.Traffic {
		if !t.Plain() {
			return false
		}
	}
	return true
}

// forceEngine sends every run down the engine path; tests set it to compare the paths.
var forceEngine = false

// runPlain runs every algorithm of a plain scenario, and every limiter of o.Own after
// them, through passes over its traffic.
func runPlain(sc *scenario.Scenario, rep *report.Report, algs []string, pol algorithms.Policy, seed uint64, o Options) error {
	builders := builders(algs, o)
	lims := make([]algorithms.Limiter, 0, len(builders))
	cols := make([]*report.Collector, len(builders))
	defer func() { finishAll(lims) }() // a limiter of a user's is closed on every path
	for i, b := range builders {
		lim, err := b.build(pol)
		if err != nil {
			return fmt.Errorf("scenario %s: %w", sc.Name, err)
		}
		lims = append(lims, lim)
		cols[i] = report.NewCollector(pol.Limit, pol.Window, time.Duration(sc.BackendWindow))
		cols[i].RecordTimeline(sc.Horizon())
	}
	internBytes, err := runPasses(sc, lims, cols, seed, o)
	if ferr := finishAll(lims); err == nil && ferr != nil {
		err = fmt.Errorf("scenario %s: %w", sc.Name, ferr)
	}
	if err != nil {
		return err
	}
	for i, lim := range lims {
		rep.Results = append(rep.Results, cols[i].Result(lim))
	}
	if o.Memory {
		rep.Memory = report.MemoryOf(lims, cols, internBytes)
	}
	return nil
}

// builders are the built-in algorithms algs, then the limiters of o.Own.
func builders(algs []string, o Options) []builder {
	out := make([]builder, 0, len(algs)+len(o.Own))
	for _, a := range algs {
		out = append(out, builder{name: a})
	}
	for _, m := range o.Own {
		out = append(out, builder{name: m.Name(), own: m})
	}
	return out
}

// runEngines runs each algorithm through its own engine, several at once unless a
// decisions file (whose rows come grouped by algorithm) or a progress display needs them
// in order. Each run is independent and seeded alike, so the results do not depend on
// how many run at once.
func runEngines(sc *scenario.Scenario, rep *report.Report, algs []string, layers []scenario.LimitSpec, seed uint64, o Options) error {
	bs := builders(algs, o)
	results := make([]report.Result, len(bs))
	workers := o.Workers
	if o.Decisions != nil || o.Progress != nil {
		workers = 1
	}
	// Each algorithm keeps its own error, so the one reported is the first algorithm's
	// whatever the timing.
	err := pool.Each(len(bs), workers, func(i int) error {
		var err error
		results[i], err = runOne(o.Context, sc, bs[i], layers, seed, o.Decisions, o.watch(sc, bs[i].name, i, len(bs)))
		return err
	})
	if err != nil {
		return err
	}
	rep.Results = append(rep.Results, results...)
	return nil
}
