package scenario

import (
	"encoding/csv"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/sim"
	"github.com/rlsim/rlsim/traffic"
)

// DefaultSeed seeds a run whose scenario and command line set no seed.
const DefaultSeed = 1

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
	// Decisions, when not nil, receives one CSV row per request and algorithm.
	Decisions *DecisionWriter
}

// Policy is the policy a run with these options uses.
func (o Options) Policy(sc *Scenario) algorithms.Policy {
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
func Run(sc *Scenario, o Options) (*report.Report, error) {
	pol := o.Policy(sc)
	if err := pol.Validate(); err != nil {
		return nil, fmt.Errorf("scenario %s: policy: %w", sc.Name, err)
	}
	algs := sc.Algorithms
	if len(o.Algorithms) > 0 {
		algs = o.Algorithms
	}
	if len(algs) == 0 {
		algs = algorithms.Names
	}
	seed := sc.SeedOr(DefaultSeed)
	if o.Seed != nil {
		seed = *o.Seed
	}
	rep := &report.Report{
		Scenario:    sc.Name,
		Description: sc.Description,
		Seed:        seed,
		Policy:      report.Policy{Limit: pol.Limit, Window: report.Duration(pol.Window), Burst: pol.EffectiveBurst()},
		Key:         sc.Key,
	}
	if sc.Cluster != nil {
		if err := runFleets(sc, rep, pol, algs, seed, o.Decisions); err != nil {
			return nil, err
		}
		return rep, nil
	}
	for _, name := range algs {
		lim, err := algorithms.New(name, pol)
		if err != nil {
			return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
		}
		res, err := runOne(sc, lim, pol, seed, o.Decisions)
		if err != nil {
			return nil, err
		}
		rep.Results = append(rep.Results, res)
	}
	return rep, nil
}

// NewRNG is the one random source of a run with this seed.
func NewRNG(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// feeder keeps one pending request of a source on the event loop.
type feeder struct {
	src  traffic.Source
	req  traffic.Request
	sink func(*traffic.Request)
}

func (f *feeder) Fire(l *sim.Loop) {
	f.sink(&f.req)
	if f.src.Next(&f.req) {
		l.At(f.req.At, f)
	}
}

func runOne(sc *Scenario, lim algorithms.Limiter, pol algorithms.Policy, seed uint64, dec *DecisionWriter) (report.Result, error) {
	return runOneWith(sc, lim, pol, seed, dec, nil)
}

// runOneWith is runOne that also tells newKey each key's name when it is first seen.
func runOneWith(sc *Scenario, lim algorithms.Limiter, pol algorithms.Policy, seed uint64, dec *DecisionWriter, newKey func(uint32, string)) (report.Result, error) {
	var loop sim.Loop
	col := report.NewCollector(pol.Limit, pol.Window, time.Duration(sc.BackendWindow))
	ids := map[string]uint32{}
	epoch := sc.EpochTime().UnixNano()
	var writeErr error
	sink := func(r *traffic.Request) {
		id, ok := ids[r.Key]
		if !ok {
			id = uint32(len(ids))
			ids[r.Key] = id
			if newKey != nil {
				newKey(id, r.Key)
			}
		}
		d := lim.Allow(id, epoch+int64(r.At), r.Cost)
		ref := col.Observe(id, int64(r.At), r.Cost, r.Class, d)
		if dec != nil && writeErr == nil {
			writeErr = dec.write(sc.Name, lim.Name(), r, d.Allowed, ref)
		}
	}
	for _, src := range sc.sources(NewRNG(seed)) {
		f := &feeder{src: src, sink: sink}
		if src.Next(&f.req) {
			loop.At(f.req.At, f)
		}
	}
	loop.Run(sc.Horizon())
	if writeErr != nil {
		return report.Result{}, fmt.Errorf("writing decisions: %w", writeErr)
	}
	return col.Result(lim), nil
}

// DecisionWriter streams the per-request decisions file:
// t_ns,key,cost,algorithm,allowed,reference_allowed,scenario.
type DecisionWriter struct {
	w      *csv.Writer
	header bool
	row    [7]string
}

// NewDecisionWriter writes decisions as CSV to w; call Flush when done.
func NewDecisionWriter(w *csv.Writer) *DecisionWriter { return &DecisionWriter{w: w} }

func (d *DecisionWriter) write(scenarioName, algorithm string, r *traffic.Request, allowed, ref bool) error {
	if !d.header {
		d.header = true
		if err := d.w.Write([]string{"t_ns", "key", "cost", "algorithm", "allowed", "reference_allowed", "scenario"}); err != nil {
			return err
		}
	}
	d.row = [7]string{strconv.FormatInt(int64(r.At), 10), r.Key, strconv.FormatInt(r.Cost, 10), algorithm,
		strconv.FormatBool(allowed), strconv.FormatBool(ref), scenarioName}
	return d.w.Write(d.row[:])
}

// Flush writes out what is buffered and reports the first write error.
func (d *DecisionWriter) Flush() error {
	d.w.Flush()
	return d.w.Error()
}
