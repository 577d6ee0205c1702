package run

import (
	"context"
	"fmt"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/cluster"
	"github.com/rlsim/rlsim/scenario"
	"github.com/rlsim/rlsim/sim"
	"github.com/rlsim/rlsim/store"
	"github.com/rlsim/rlsim/traffic"
)

// Maker builds a limiter rlsim does not ship: a user's Lua script or program (package
// external). Its results are reported under Name, after the built-in algorithms, measured
// by the same reference. A run builds one limiter per pass or engine cell with New, which
// must give fresh state; a limiter that also has
//
//	SetName(key, name)               is told each key's name before its first decision;
//	Send / Receive / Ahead           is written up to Ahead requests ahead of the answers
//	                                 read, in order, on open-loop traffic (see aheadLimiter);
//	Err() error                      fails the run with that error once it has one;
//	Close() error                    is closed when the run is done with it, on every path.
type Maker interface {
	Name() string
	New(p algorithms.Policy) (algorithms.Limiter, error)
}

// fleetScript is a Maker that can be a fleet's shared script (external.Lua): a cluster
// scenario runs it on each fleet variant of the shared placement.
type fleetScript interface {
	Maker
	// FleetStore opens the script's store; refuseCrossSlot fails a call that touches a
	// key in another Redis Cluster slot than its KEYS[1]'s (a fleet moving slots).
	FleetStore(p algorithms.Policy, refuseCrossSlot bool) (*store.UserStore, error)
}

// aheadLimiter decides requests written ahead of the decisions read: open-loop traffic
// does not depend on decisions, so a run sends requests as they come and receives their
// decisions up to Ahead requests later, in order (a pass a chunk at a time, see
// pass.decideAhead; an engine through runEngineAhead). The collectors see the same
// requests in the same order as with Allow.
type aheadLimiter interface {
	algorithms.Limiter
	SetName(key uint32, name string)
	Send(key uint32, now, cost int64)
	Receive() algorithms.Decision
	Ahead() int
}

// builder makes an algorithm's limiters: a built-in by name, or one a Maker makes.
type builder struct {
	name string
	own  Maker
}

func (b builder) build(p algorithms.Policy) (algorithms.Limiter, error) {
	if b.own != nil {
		return b.own.New(p)
	}
	return algorithms.New(b.name, p)
}

// finishAll finishes every limiter of lims and returns the first error.
func finishAll(lims []algorithms.Limiter) error {
	var first error
	for _, lim := range lims {
		if err := algorithms.Finish(lim); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// runEngineAhead is runOneWith for a limiter written ahead (aheadLimiter) on a scenario
// of one limit with one quota, whose requests need an engine (identities, addresses,
// proxies): each request is keyed and sent as it comes and measured when its decision is
// read, Ahead requests later, in the original order (as runFleetPipelined does for a
// fleet's batches).
func runEngineAhead(ctx context.Context, sc *scenario.Scenario, eng *engine, lim aheadLimiter, label string, seed uint64, dec *DecisionWriter, progress *progressCounter) error {
	var loop sim.Loop
	held := make([]heldRequest, 0, lim.Ahead())
	depth := max(lim.Ahead(), 1)
	var writeErr error
	flush := func() {
		for i := range held {
			h := &held[i]
			var allowed, ref bool
			key := h.key
			if h.unkey != nil {
				allowed, key, ref = eng.refuseUnkeyed(&h.req, h.unkey)
			} else {
				allowed, ref = eng.finishKeyed(&h.req, h.id, lim.Receive())
			}
			progress.count(h.req.At)
			if dec != nil && writeErr == nil {
				writeErr = dec.write(sc.Name, label, &h.req, key.String(), allowed, ref)
			}
		}
		clear(held)
		held = held[:0]
	}
	feedAll(sc, seed, &loop, func(r *traffic.Request) {
		held = append(held, heldRequest{req: *r})
		h := &held[len(held)-1]
		h.id, h.key, h.unkey = eng.keyFor(&h.req)
		if h.unkey == nil {
			lim.Send(h.id, eng.epoch+int64(h.req.At), h.req.Cost)
		}
		if len(held) >= depth {
			flush()
		}
	})
	if err := loop.RunContext(ctx, sc.Horizon()); err != nil {
		return err
	}
	flush()
	if writeErr != nil {
		return fmt.Errorf("writing decisions: %w", writeErr)
	}
	return nil
}

// ownFleets are the scripts of o.Own a fleet variant runs as its shared script: the
// shared placement only, whose every decision is the script's; a variant that falls back
// on a node-local guard during an outage (fail-open-local) would mix a built-in into it.
func ownFleets(v fleetVariant, o Options) []fleetScript {
	if k := cluster.PlacementOf(v.cfg.Placement); k == nil || !k.Asks || k.Guarded {
		return nil
	}
	for _, out := range v.cfg.Outages {
		if out.Policy == "fail-open-local" {
			return nil
		}
	}
	var out []fleetScript
	for _, m := range o.Own {
		if fs, ok := m.(fleetScript); ok {
			out = append(out, fs)
		}
	}
	return out
}

// ownFleetCarrier is the built-in whose script call a fleet makes for a user's script: a
// key per client, the time and the cost, all of which UserStore passes on by the calling
// convention; the fleet never runs the built-in's script itself.
const ownFleetCarrier = algorithms.TokenBucketName

// fleetStore opens the store of one fleet run of alg: the scenario's, or, when alg is a
// user's script of o.Own, that script on its own face (miniredis, or --redis), refusing
// calls that span Redis Cluster slots when the fleet moves slots (clustered).
func fleetStore(sc *scenario.Scenario, alg string, pol algorithms.Policy, clustered bool, o Options) (st store.Store, carrier string, err error) {
	for _, m := range o.Own {
		fs, ok := m.(fleetScript)
		if !ok || m.Name() != alg {
			continue
		}
		u, err := fs.FleetStore(pol, clustered)
		if err != nil {
			return nil, "", fmt.Errorf("scenario %s: %w", sc.Name, err)
		}
		return u, ownFleetCarrier, nil
	}
	st, err = openStore(sc, o.Store)
	return st, alg, err
}

// redisFace is the Redis face under a fleet's store, if any.
func redisFace(st store.Store) (*store.Redis, bool) {
	switch s := st.(type) {
	case *store.Redis:
		return s, true
	case *store.UserStore:
		return s.Face().Redis(), true
	}
	return nil, false
}

// namedFleet is a fleet reported under another algorithm's name: a user's script that
// the fleet runs through ownFleetCarrier's call.
type namedFleet struct {
	namedLimiter
	name string
}

func (n namedFleet) Name() string { return n.name }
