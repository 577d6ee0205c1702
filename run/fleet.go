package run

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/cluster"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/scenario"
	"github.com/rlsim/rlsim/sim"
	"github.com/rlsim/rlsim/store"
)

// fleetVariant is one fleet a cluster scenario runs.
type fleetVariant struct {
	name string
	cfg  cluster.Config
}

// fleetVariants builds the fleets of a cluster scenario, in file order, the fleet's
// defaults applied; without variants the fleet is named after its placement.
func fleetVariants(s *scenario.Scenario, pol algorithms.Policy) []fleetVariant {
	var out []fleetVariant
	for _, f := range s.Fleets() {
		cfg := f.Config.WithDefaults(pol)
		out = append(out, fleetVariant{name: cmp.Or(f.Name, cfg.Placement), cfg: cfg})
	}
	return out
}

// openStore opens the scenario's store face for one run, talking to a server as o says.
func openStore(s *scenario.Scenario, o store.Options) (store.Store, error) {
	switch s.Cluster.Store {
	case "miniredis":
		return store.NewMiniredisWith(o)
	case "redis":
		r, err := store.NewRedisWith(s.Cluster.RedisURL, o)
		if err != nil {
			return nil, fmt.Errorf("scenario %s: cluster.redis_url: %w", s.Name, err)
		}
		return r, nil
	}
	return store.NewModel(), nil
}

// scenarioPrefix is what every key a run of sc writes on a store begins with: the
// cluster's prefix and the scenario's name (each variant and algorithm adds its own).
func scenarioPrefix(sc *scenario.Scenario) string {
	return fmt.Sprintf("%s%s:", sc.Cluster.Prefix, sc.Name)
}

// cleanupAdvice is the sentence that tells how to delete what runs of sc wrote on its
// Redis server: redis-cli with the server's host, port and database.
func cleanupAdvice(sc *scenario.Scenario) string {
	cmd, note := store.CleanupCommand(sc.Cluster.RedisURL, scenarioPrefix(sc))
	if cmd == "" {
		return ""
	}
	advice := "If a run killed outright left them, delete what runs of this scenario wrote with: " + cmd
	if note != "" {
		advice += " (" + note + ")"
	}
	return advice
}

// runFleets runs every fleet variant with every algorithm it takes.
func runFleets(sc *scenario.Scenario, rep *report.Report, pol algorithms.Policy, layers []scenario.LimitSpec, algs []string, seed uint64, o Options) error {
	rep.Results = []report.Result{} // a list in JSON even when no algorithm fits a variant
	if s := o.StoreStats; s != nil && sc.Cluster.Store == "redis" {
		s.Prefixes = append(s.Prefixes, scenarioPrefix(sc))
	}
	for vi, v := range fleetVariants(sc, pol) {
		fleetAlgs := v.cfg.Runs(algs)
		for _, own := range ownFleets(v, o) {
			fleetAlgs = append(fleetAlgs, own.Name())
		}
		for _, alg := range fleetAlgs {
			res, err := runFleet(sc, v, vi, alg, pol, layers, seed, o)
			if err != nil {
				return err
			}
			rep.Results = append(rep.Results, res)
		}
	}
	return nil
}

func runFleet(sc *scenario.Scenario, v fleetVariant, vi int, alg string, pol algorithms.Policy, layers []scenario.LimitSpec, seed uint64, o Options) (_ report.Result, retErr error) {
	st, carrier, err := fleetStore(sc, alg, pol, len(v.cfg.Reshards) > 0, o)
	if err != nil {
		return report.Result{}, err
	}
	defer st.Close()
	face, onRedis := redisFace(st)
	if onRedis && o.StoreStats != nil {
		defer func() {
			if u, ok := st.(*store.UserStore); ok { // a user's script: one call per round trip
				if u.Name() == "redis" {
					o.StoreStats.ScriptCalls += u.Calls()
					o.StoreStats.RoundTrips += u.Calls()
				}
				return
			}
			o.StoreStats.ScriptCalls += face.ScriptCalls()
			o.StoreStats.RoundTrips += face.RoundTrips()
		}()
	}
	cfg := v.cfg
	cfg.Prefix = fmt.Sprintf("%s%d:%s:", scenarioPrefix(sc), vi, alg)
	if r, ok := redisFace(st); ok && st.Name() == "redis" {
		// Touch only keys this run writes: refuse a prefix someone already uses, and
		// delete what the run wrote when it ends, however it ends.
		first, err := r.FirstKey(cfg.Prefix)
		if err != nil {
			return report.Result{}, fmt.Errorf("scenario %s: looking for keys under %q on the Redis server: %w", sc.Name, cfg.Prefix, err)
		}
		if first != "" {
			return report.Result{}, fmt.Errorf("scenario %s: keys under %q already exist on the Redis server (%s, ...); refusing to touch them. %s",
				sc.Name, cfg.Prefix, first, cleanupAdvice(sc))
		}
		defer func() {
			var n int64
			var derr error
			o.StoreStats.timed(func() { n, derr = r.DeleteUnder(cfg.Prefix) })
			if derr != nil {
				derr = fmt.Errorf("scenario %s: deleting the keys the run wrote under %q: %w", sc.Name, cfg.Prefix, derr)
			}
			if s := o.StoreStats; s != nil {
				s.Deleted += n
				if s.DeleteErr == nil {
					s.DeleteErr = derr
				}
			}
			if retErr == nil {
				retErr = derr
			}
		}()
	}
	fleet, err := cluster.New(cfg, carrier, pol, st, sim.NewRNG(sim.Sibling(seed, vi), sim.RunStream))
	if err != nil {
		return report.Result{}, fmt.Errorf("scenario %s: cluster variant %s, %s: %w", sc.Name, v.name, alg, err)
	}
	fleet.SetLabel(v.name)
	meter := report.NewFleetMeter(pol.Limit, pol.Window)
	meter.After(eventTimes(cfg))
	// The two types have the same fields: a conversion, not a copy per decision.
	fleet.Observe(func(o *cluster.Observation) { meter.Observe((*report.FleetDecision)(o)) })
	var res report.Result
	switch {
	case carrier != alg: // a user's script, run one call at a time and named after itself
		res, err = runOneWith(o.Context, sc, builder{name: carrier}, layers, seed, o.Decisions, nil, namedFleet{fleet, alg + "@" + v.name})
	case onRedis && o.Pipeline > 1 && fleet.Pipelines():
		res, err = runFleetPipelined(o.Context, sc, alg, layers, seed, o.Decisions, fleet, o.Pipeline)
	default:
		res, err = runOneWith(o.Context, sc, builder{name: alg}, layers, seed, o.Decisions, nil, fleet)
	}
	if err != nil {
		return res, err
	}
	res.Algorithm = fleet.Algorithm()
	if carrier != alg {
		res.Algorithm = alg
	}
	var stats cluster.Stats
	o.StoreStats.timed(func() { stats, err = fleet.Finish() })
	if err != nil {
		return res, fmt.Errorf("scenario %s: cluster variant %s, %s: store: %w", sc.Name, v.name, alg, err)
	}
	res.Distributed = fleetFigures(v, stats, meter)
	res.Distributed.EffectiveLimit = res.PeakWindowAdmitted
	addDesigns(res.Distributed, v.cfg, fleet.Designs(), res.Requests)
	if membership, _ := eventTimes(cfg); len(membership) > 0 && cfg.MovesOwners() && carrier == alg {
		without, err := membershipBaseline(o.Context, sc, cfg, vi, alg, pol, layers, seed, membership)
		if err != nil {
			return res, fmt.Errorf("scenario %s: cluster variant %s, %s, without its membership changes: %w", sc.Name, v.name, alg, err)
		}
		res.Distributed.MembershipOverAdmission = ratioTo(res.Distributed.MembershipOverAdmission, without)
	} else {
		res.Distributed.MembershipOverAdmission = 0 // no owners to move: not in play
	}
	return res, nil
}

// membershipBaseline runs fleet cfg again with its node count never changing, on the same
// traffic and random draws, and returns what its meter measures in the windows after the
// times the changes would have been (membership): the over-admission the algorithm has
// there without them — a bucket's burst and refill are its own, not the change's.
func membershipBaseline(ctx context.Context, sc *scenario.Scenario, cfg cluster.Config, vi int, alg string, pol algorithms.Policy,
	layers []scenario.LimitSpec, seed uint64, membership []int64) (float64, error) {
	cfg.Scale = nil
	fleet, err := cluster.New(cfg, alg, pol, store.NewModel(), sim.NewRNG(sim.Sibling(seed, vi), sim.RunStream))
	if err != nil {
		return 0, err
	}
	meter := report.NewFleetMeter(pol.Limit, pol.Window)
	meter.After(membership, nil)
	fleet.Observe(func(o *cluster.Observation) { meter.Observe((*report.FleetDecision)(o)) })
	if _, err := runOneWith(ctx, sc, builder{name: alg}, layers, seed, nil, nil, fleet); err != nil {
		return 0, err
	}
	if _, err := fleet.Finish(); err != nil {
		return 0, err
	}
	var d report.Distributed
	meter.Fill(&d)
	return d.MembershipOverAdmission, nil
}

// ratioTo is with over without, 0 when without is (nothing measured).
func ratioTo(with, without float64) float64 {
	if without == 0 {
		return 0
	}
	return with / without
}

// fleetFigures are a fleet variant's figures: the fleet's own facts and its meter's.
func fleetFigures(v fleetVariant, s cluster.Stats, m *report.FleetMeter) *report.Distributed {
	d := &report.Distributed{
		Variant: v.name, Placement: v.cfg.Placement, Balancer: v.cfg.Balancer, Nodes: v.cfg.Nodes, NodesMax: s.NodesMax,
		Store: s.Store, Skew: report.Duration(v.cfg.Skew), GuardLimit: s.GuardLimit, Alerts: s.Alerts, Alert: s.Alert,
		BlockedForever: s.BlockedForever, LeakedKeys: s.LeakedKeys, LeakedBytes: s.LeakedBytes,
		StoreLatencyMS: float64(v.cfg.Latency) / float64(time.Millisecond),
		BreakerOpens:   s.BreakerOpens, StaleReads: s.StaleReads, LostWrites: s.LostWrites,
		Events: fleetEvents(v.cfg),
	}
	if v.cfg.UsesStore() {
		d.Clock = v.cfg.Clock
	}
	m.Fill(d)
	return d
}

// fleetEvents are a fleet's outages and node-count changes, in time order.
func fleetEvents(cfg cluster.Config) []report.FleetEvent {
	var out []report.FleetEvent
	for _, o := range cfg.Outages {
		e := report.FleetEvent{At: o.At, For: o.For, Policy: o.Policy}
		if o.Nodes > 0 {
			e.Label = fmt.Sprintf("nodes 0–%d cut off", o.Nodes-1)
		}
		out = append(out, e)
	}
	if cfg.UsesStore() {
		for _, f := range cfg.Failovers {
			out = append(out, report.FleetEvent{At: f.At, Label: fmt.Sprintf("failover (lag %s)", f.Lag)})
		}
		for _, r := range cfg.Reshards {
			out = append(out, report.FleetEvent{At: r.At, For: r.For, Label: "slots on the move"})
		}
	}
	nodes := cfg.Nodes
	for _, st := range cfg.Scale {
		if st.Nodes != nodes { // a step to the count the fleet already has changes nothing
			out = append(out, report.FleetEvent{At: st.At, Nodes: st.Nodes})
			nodes = st.Nodes
		}
	}
	slices.SortStableFunc(out, func(a, b report.FleetEvent) int { return cmp.Compare(a.At, b.At) })
	return out
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
