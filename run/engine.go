package run

import (
	"fmt"
	"slices"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/scenario"
	"github.com/rlsim/rlsim/traffic"
)

// layerPolicies returns the layers a run checks: the limits section, or one layer made of
// the policy and key. Non-zero overrides replace every layer's default limit, window
// and burst (not the per-plan quotas).
func layerPolicies(s *scenario.Scenario, o Options) []scenario.LimitSpec {
	if len(s.Limits) == 0 {
		p := o.Policy(s)
		return []scenario.LimitSpec{{Name: s.Key, Key: s.Key, Limit: p.Limit, Window: scenario.Duration(p.Window), Burst: p.Burst}}
	}
	out := slices.Clone(s.Limits)
	for i := range out {
		if o.Limit != 0 {
			out[i].Limit = o.Limit
		}
		if o.Window != 0 {
			out[i].Window = scenario.Duration(o.Window)
		}
		if o.Burst != 0 {
			out[i].Burst = o.Burst
		}
	}
	return out
}

// engine decides every request of one algorithm's run through all layers and measures.
type engine struct {
	layers  []*layer
	counts  []report.LayerCount
	outcome *report.Collector // nil for a single implicit layer, whose collector is the result
	harm    *report.Harm
	network *traffic.Network
	epoch   int64

	unkeyed       int64
	unkeyedReason string
	unkeyedLine   int // the line of the first unkeyed request, for a replay's shard
	line          int // the line of the request being decided, when a replay says

	cells []*cell // every cell built, for finish
}

type layer struct {
	keyer traffic.Keyer
	cells []*cell
	plans map[string]int // plan → cell index; cell 0 is the layer's own limit
}

type cell struct {
	lim   algorithms.Limiter
	col   *report.Collector
	ids   map[traffic.Key]uint32
	named namedLimiter // lim itself when it wants the keys' names, else nil
}

// namedLimiter is a limiter that is told each key's name when the key is first seen: a
// fleet, whose store keys are named after the request's key.
type namedLimiter interface {
	algorithms.Limiter
	SetName(key uint32, name string)
}

func newEngine(s *scenario.Scenario, b builder, specs []scenario.LimitSpec, layered bool, fleet namedLimiter) (*engine, error) {
	if fleet != nil && layered {
		return nil, fmt.Errorf("a cluster runs one limit; layered limits are not supported with it")
	}
	e := &engine{
		harm:    report.NewHarm(time.Duration(specs[0].Window)),
		network: traffic.NewNetwork(s.Proxies),
		epoch:   s.EpochTime().UnixNano(),
	}
	backend := time.Duration(s.BackendWindow)
	if layered {
		e.outcome = report.NewOutcomeCollector(backend)
	}
	newCell := func(p algorithms.Policy) (*cell, error) {
		lim, err := b.build(p)
		if err != nil {
			return nil, err
		}
		c := &cell{lim: lim, col: report.NewCollector(p.Limit, p.Window, backend), ids: map[traffic.Key]uint32{}}
		c.named, _ = lim.(namedLimiter)
		e.cells = append(e.cells, c)
		return c, nil
	}
	for _, spec := range specs {
		keyer, err := traffic.ParseKeyer(spec.Key)
		if err != nil {
			e.finish()
			return nil, err
		}
		l := &layer{keyer: keyer, plans: map[string]int{}}
		c, err := newCell(spec.Policy())
		if err != nil {
			e.finish()
			return nil, fmt.Errorf("layer %s: %w", spec.Name, err)
		}
		if fleet != nil {
			c.lim, c.named = fleet, fleet
			e.cells = e.cells[:len(e.cells)-1] // the fleet is its run's to finish
		}
		l.cells = append(l.cells, c)
		for _, p := range spec.Plans {
			c, err := newCell(p.Policy())
			if err != nil {
				e.finish()
				return nil, fmt.Errorf("layer %s plan %s: %w", spec.Name, p.Name, err)
			}
			l.plans[p.Name] = len(l.cells)
			l.cells = append(l.cells, c)
		}
		e.layers = append(e.layers, l)
		e.counts = append(e.counts, report.LayerCount{Layer: spec.Name, Key: spec.Key})
	}
	return e, nil
}

// decide runs r through the layers, narrowest first, and returns whether it was admitted,
// the key and reference verdict of the layer that decided last (for the decisions file).
func (e *engine) decide(r *traffic.Request) (allowed bool, key traffic.Key, ref bool) {
	e.network.Deliver(r)
	t := int64(r.At)
	allowed = true
	var delay time.Duration
	for i, l := range e.layers {
		k, err := l.keyer.Key(r)
		if err != nil {
			// A request that cannot be keyed is refused: a limit that lets unkeyable
			// requests through is no limit against whoever sends garbage.
			e.unkeyed++
			if e.unkeyedReason == "" {
				e.unkeyedReason, e.unkeyedLine = err.Error(), e.line
			}
			if e.outcome != nil {
				e.outcome.ObserveUnkeyed(r.Class)
			} else {
				l.cells[0].col.ObserveUnkeyed(r.Class)
			}
			e.counts[i].Checked++
			e.counts[i].Refused++
			e.harm.Observe(r, false)
			return false, traffic.Key{Name: "(unkeyed)"}, false
		}
		c := l.cells[0]
		if len(l.plans) > 0 {
			if j, ok := l.plans[r.Plan]; ok {
				c = l.cells[j]
			}
		}
		id, ok := c.ids[k]
		if !ok {
			id = uint32(len(c.ids))
			c.ids[k] = id
			if c.named != nil {
				c.named.SetName(id, k.String())
			}
		}
		d := c.lim.Allow(id, e.epoch+t, r.Cost)
		c.col.TimelineOrder(int64(e.line))
		ref = c.col.Observe(id, t, r.Cost, r.Class, d)
		key = k
		e.counts[i].Checked++
		if !d.Allowed {
			e.counts[i].Refused++
			allowed = false
			break
		}
		if r.Class == traffic.Attacker {
			e.counts[i].AttackerPassed++
		}
		delay = max(delay, d.Delay)
	}
	if e.outcome != nil {
		e.outcome.Observe(0, t, r.Cost, r.Class, algorithms.Decision{Allowed: allowed, Delay: delay})
	}
	e.harm.Observe(r, allowed)
	return allowed, key, ref
}

// finish closes the limiters of the cells built, those a user brings (see Maker), and
// returns the first error one of them met.
func (e *engine) finish() error {
	var first error
	for _, c := range e.cells {
		if err := algorithms.Finish(c.lim); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// recordTimeline makes the run keep a timeline for charts: that of the first layer's own
// limit, whose policy the report shows.
func (e *engine) recordTimeline(horizon time.Duration) {
	e.layers[0].cells[0].col.RecordTimeline(horizon)
}

// result finishes the measurement.
func (e *engine) result(algorithm string) report.Result {
	var res report.Result
	if e.outcome == nil {
		c := e.layers[0].cells[0]
		res = c.col.Result(c.lim)
	} else {
		m := report.Layered{Outcome: e.outcome, Layers: e.counts}
		for _, l := range e.layers {
			var cells []report.LayerCell
			for _, c := range l.cells {
				cells = append(cells, report.LayerCell{Collector: c.col, Limiter: c.lim})
			}
			m.Cells = append(m.Cells, cells)
		}
		res = m.Result(algorithm)
		first := e.layers[0].cells[0]
		res.Timeline = first.col.Result(first.lim).Timeline
	}
	res.Unkeyed = e.unkeyed
	res.UnkeyedReason = e.unkeyedReason
	e.harm.Fill(&res)
	return res
}

// partial is what a layered replay's shard measured, raw, for MergeReplay: the outcome's
// counts, each cell's own, the layers' counts, the harm and the unkeyed.
func (e *engine) partial(algorithm string) AlgorithmPartial {
	p := AlgorithmPartial{Algorithm: algorithm, Collector: e.outcome.Partial(), Layers: append([]report.LayerCount(nil), e.counts...),
		Harm: e.harm.Partial(), Unkeyed: e.unkeyed, UnkeyedLine: e.unkeyedLine, UnkeyedReason: e.unkeyedReason}
	for _, l := range e.layers {
		var row []CellPartial
		for _, c := range l.cells {
			t := report.TotalsOf(c.lim)
			row = append(row, CellPartial{Totals: t, Collector: c.col.Partial()})
			p.Totals = p.Totals.Add(t)
		}
		p.Cells = append(p.Cells, row)
	}
	return p
}
