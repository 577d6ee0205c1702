package scenario

import (
	"encoding/csv"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/report"
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
	// Decisions, when not nil, receives one CSV row per request and algorithm. The
	// algorithms then run one after the other, so the rows come grouped by algorithm.
	Decisions *DecisionWriter
	// Workers is how many algorithms' passes over the traffic may run at once; zero
	// means GOMAXPROCS. The results do not depend on it.
	Workers int
	// Memory asks for the report's memory section (what the run holds per key).
	Memory bool
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
	lims := make([]algorithms.Limiter, len(algs))
	cols := make([]*report.Collector, len(algs))
	for i, name := range algs {
		lim, err := algorithms.New(name, pol)
		if err != nil {
			return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
		}
		lims[i] = lim
		cols[i] = report.NewCollector(pol.Limit, pol.Window, time.Duration(sc.BackendWindow))
	}
	internBytes, err := runPasses(sc, lims, cols, seed, o)
	if err != nil {
		return nil, err
	}
	for i, lim := range lims {
		rep.Results = append(rep.Results, cols[i].Result(lim))
	}
	if o.Memory {
		rep.Memory = report.MemoryOf(lims, cols, internBytes)
	}
	return rep, nil
}

// NewRNG is the one random source of a run with this seed.
func NewRNG(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
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
