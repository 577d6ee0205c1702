package run

import (
	"context"
	"fmt"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/cluster"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/scenario"
	"github.com/rlsim/rlsim/sim"
	"github.com/rlsim/rlsim/traffic"
)

// DefaultPipeline is how many decisions a fleet on a Redis store holds before it sends
// their script calls as one pipeline, unless told otherwise.
const DefaultPipeline = 256

// MaxPipeline bounds a pipeline so that one round trip stays well inside the store's
// timeout (--store-timeout, 2 s by default): 10000 calls take about 0.15 s on a loopback
// Redis.
const MaxPipeline = 10000

// StoreStats counts what the runs of a scenario sent to a Redis store (miniredis or a real
// server): script decisions, and the round trips that carried them and the other commands;
// and, on a real server, the keys the runs deleted when they ended.
type StoreStats struct {
	ScriptCalls int64
	RoundTrips  int64
	// Deleted counts the keys the runs wrote on a real server and deleted when they
	// ended, under the prefixes in Prefixes (one per scenario, in order). DeleteErr is
	// the first deletion that failed: the keys it left are still there.
	Deleted   int64
	Prefixes  []string
	DeleteErr error
	// Clock, when not nil, reads the wall clock (the command's: nothing in a run does);
	// the runs then time what they spend after deciding — the audit of the keys left on
	// the store and their deletion — in AuditTime, apart from the decisions.
	Clock     func() time.Time
	AuditTime time.Duration
}

// timed runs fn and, with a Clock, adds its wall time to AuditTime.
func (s *StoreStats) timed(fn func()) {
	if s == nil || s.Clock == nil {
		fn()
		return
	}
	start := s.Clock()
	fn()
	s.AuditTime += s.Clock().Sub(start)
}

// heldRequest is a request of a pipelined fleet run whose decision waits for the batch.
type heldRequest struct {
	req   traffic.Request
	id    uint32
	key   traffic.Key
	unkey error // why the request could not be keyed, or nil
}

// PipelineDepth is how many batches a pipelined fleet run keeps on their way to the
// store while it makes the next. One batch on its way (its replies awaited as soon as the
// next is made) left the server idle whenever the run waited for a core on a busy
// machine; with several, the server has the batches after the one the run waits for to
// work through. Eight batches of 256 are about 15 ms of a loopback Redis's work: three
// (6 ms) still let it run dry when the run was held up, in whole fleet runs on an idle
// 2-core machine (docs/performance.md, "Many keys").
const PipelineDepth = 8

// runFleetPipelined is runOneWith for a fleet whose store calls can be batched (see
// cluster.Fleet.Pipelines). Open-loop traffic does not depend on decisions, so the run
// takes each request up to its store call and holds it; every batch requests it sends the
// held calls as one pipeline, keeps up to PipelineDepth batches on their way and, while
// the store works through them, measures the oldest (its replies back by then) and takes
// the next requests up to their store call. Batches are measured oldest first and the
// requests of each in their original order: the collector, the decisions file (rows
// named "<algorithm>@<variant>", as runOneWith names a fleet's) and the fleet see exactly
// what one-by-one sees. A store error stops the run (Finish returns it); a cancelled run
// waits for the batches on their way before it returns.
func runFleetPipelined(ctx context.Context, sc *scenario.Scenario, algorithm string, layers []scenario.LimitSpec, seed uint64, dec *DecisionWriter, fleet *cluster.Fleet, batch int) (report.Result, error) {
	var loop sim.Loop
	eng, err := newEngine(sc, builder{name: algorithm}, layers, len(sc.Limits) > 0, fleet)
	if err != nil {
		return report.Result{}, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	if len(eng.layers) != 1 || len(eng.layers[0].cells) != 1 {
		return report.Result{}, fmt.Errorf("scenario %s: a pipelined fleet runs one limit with one quota", sc.Name)
	}
	eng.recordTimeline(sc.Horizon())
	batch = min(batch, MaxPipeline)
	// held is the batch being made; away the requests of the batches on their way, oldest
	// first, in step with the fleet's (one Send for each); spare the buffers measured.
	held := make([]heldRequest, 0, batch)
	var away, spare [][]heldRequest
	decided := make([]algorithms.Decision, 0, batch)
	var writeErr error
	// measure finishes the oldest batch on its way.
	measure := func() {
		hs := away[0]
		away = away[1:]
		decided = decided[:0]
		fleet.Receive(func(d algorithms.Decision) { decided = append(decided, d) })
		next := 0
		for i := range hs {
			h := &hs[i]
			var allowed, ref bool
			key := h.key
			if h.unkey != nil {
				allowed, key, ref = eng.refuseUnkeyed(&h.req, h.unkey)
			} else {
				allowed, ref = eng.finishKeyed(&h.req, h.id, decided[next])
				next++
			}
			if dec != nil && writeErr == nil {
				writeErr = dec.write(sc.Name, fleet.Name(), &h.req, key.String(), allowed, ref)
			}
		}
		clear(hs)
		spare = append(spare, hs[:0])
	}
	// send puts the batch being made on its way, measures the oldest once too many are,
	// and starts the next.
	send := func() {
		fleet.Send()
		away = append(away, held)
		if fleet.Out() > PipelineDepth {
			measure()
		}
		if n := len(spare); n > 0 {
			held, spare = spare[n-1], spare[:n-1]
		} else {
			held = make([]heldRequest, 0, batch)
		}
	}
	sink := func(r *traffic.Request) {
		held = append(held, heldRequest{req: *r})
		h := &held[len(held)-1]
		h.id, h.key, h.unkey = eng.keyFor(&h.req)
		if h.unkey == nil {
			fleet.Defer(h.id, eng.epoch+int64(h.req.At), h.req.Cost)
		}
		if len(held) >= batch {
			send()
			if fleet.Err() != nil {
				loop.Stop() // every later decision would be refused: Finish reports the error
			}
		}
	}
	feedAll(sc, seed, &loop, sink)
	if err := loop.RunContext(ctx, sc.Horizon()); err != nil || fleet.Err() != nil {
		fleet.Drop()
		return report.Result{}, err
	}
	send()
	for fleet.Out() > 0 {
		measure()
	}
	if writeErr != nil {
		return report.Result{}, fmt.Errorf("writing decisions: %w", writeErr)
	}
	return eng.result(algorithm), nil
}

// keyFor is the first half of decide for an engine of one layer with one cell: it
// delivers r through the network, keys it and interns the key (telling a fleet its
// name), or returns why r cannot be keyed.
func (e *engine) keyFor(r *traffic.Request) (uint32, traffic.Key, error) {
	e.network.Deliver(r)
	l := e.layers[0]
	k, err := l.keyer.Key(r)
	if err != nil {
		return 0, traffic.Key{}, err
	}
	c := l.cells[0]
	id, ok := c.ids[k]
	if !ok {
		id = uint32(len(c.ids))
		c.ids[k] = id
		if c.named != nil {
			c.named.SetName(id, k.String())
		}
	}
	return id, k, nil
}

// refuseUnkeyed records, as decide does, a request that could not be keyed.
func (e *engine) refuseUnkeyed(r *traffic.Request, why error) (allowed bool, key traffic.Key, ref bool) {
	e.unkeyed++
	if e.unkeyedReason == "" {
		e.unkeyedReason = why.Error()
	}
	e.layers[0].cells[0].col.ObserveUnkeyed(r.Class)
	e.counts[0].Checked++
	e.counts[0].Refused++
	e.harm.Observe(r, false)
	return false, traffic.Key{Name: "(unkeyed)"}, false
}

// finishKeyed is the second half of decide: it measures the decision d on key id.
func (e *engine) finishKeyed(r *traffic.Request, id uint32, d algorithms.Decision) (allowed, ref bool) {
	c := e.layers[0].cells[0]
	ref = c.col.Observe(id, int64(r.At), r.Cost, r.Class, d)
	e.counts[0].Checked++
	if !d.Allowed {
		e.counts[0].Refused++
	} else if r.Class == traffic.Attacker {
		e.counts[0].AttackerPassed++
	}
	e.harm.Observe(r, d.Allowed)
	return d.Allowed, ref
}
