// Package sweep runs one scenario over a grid of parameter values — every combination of
// the values given for each parameter — on all cores, one result row per grid point. A
// sweep can be cut into shards (a deterministic share of the grid points each) that run
// on different machines and are merged back into exactly the results of a single run.
package sweep

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/internal/pool"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/run"
	"github.com/rlsim/rlsim/scenario"
	"github.com/rlsim/rlsim/sim"
	"github.com/rlsim/rlsim/store"
)

// Names lists the parameters a sweep can vary, as written in --param.
var Names = append([]string{"policy.limit", "policy.window", "policy.burst", "seed", "duration"}, clusterParams...)

// Param is one swept parameter and the values it takes, in the order given.
type Param struct {
	Name   string   `json:"name"`
	Values []string `json:"values"`
}

// ParseParam reads "name=v1,v2,..." (for example "policy.window=1s,10s,1m"). Every value
// is checked now, so a typo fails before anything runs.
func ParseParam(s string) (Param, error) {
	name, list, ok := strings.Cut(s, "=")
	if !ok || name == "" || list == "" {
		return Param{}, fmt.Errorf("%q: want NAME=VALUE[,VALUE...], such as policy.window=1s,10s,1m", s)
	}
	if !slices.Contains(Names, name) {
		return Param{}, fmt.Errorf("%q: unknown parameter %q (want one of %s)", s, name, strings.Join(Names, ", "))
	}
	p := Param{Name: name}
	for v := range strings.SplitSeq(list, ",") {
		v = strings.TrimSpace(v)
		if err := apply(&setting{}, name, v); err != nil {
			return Param{}, fmt.Errorf("%s: %w", name, err)
		}
		if slices.Contains(p.Values, v) {
			return Param{}, fmt.Errorf("%s: value %q given twice", name, v)
		}
		p.Values = append(p.Values, v)
	}
	return p, nil
}

// setting is what one grid point changes in the scenario run.
type setting struct {
	opts     run.Options
	duration time.Duration
	cluster  clusterSetting
}

// apply parses value for the parameter name into s.
func apply(s *setting, name, value string) error {
	switch name {
	case "policy.limit", "policy.burst":
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil || n <= 0 || n > algorithms.MaxUnits {
			return fmt.Errorf("want a whole number of units from 1 to %d (2^52), got %q", int64(algorithms.MaxUnits), value)
		}
		if name == "policy.limit" {
			s.opts.Limit = n
		} else {
			s.opts.Burst = n
		}
	case "policy.window", "duration":
		d, err := time.ParseDuration(value)
		if err != nil || d <= 0 {
			return fmt.Errorf("want a positive duration such as 1s, 10s or 1m, got %q", value)
		}
		if name == "policy.window" {
			if err := sim.CheckWindow(d); err != nil {
				return err
			}
			s.opts.Window = d
		} else {
			s.duration = d
		}
	case "seed":
		n, err := strconv.ParseUint(value, 10, 64)
		if err != nil {
			return fmt.Errorf("want a whole number, got %q", value)
		}
		s.opts.Seed = &n
	case "cluster.sync", "cluster.sync_to", "cluster.nodes", "cluster.failover_lag", "cluster.maxmemory", "cluster.eviction_policy":
		return applyCluster(&s.cluster, name, value)
	default:
		return fmt.Errorf("unknown parameter %q", name)
	}
	return nil
}

// MaxPoints bounds a grid, so that a typo cannot ask for a sweep that never ends.
const MaxPoints = 1 << 20

// Size is the number of grid points: the product of the value counts, or MaxPoints+1 when
// that is more than MaxPoints.
func Size(params []Param) int {
	n := 1
	for _, p := range params {
		n *= len(p.Values)
		if n > MaxPoints {
			return MaxPoints + 1
		}
	}
	return n
}

// PointValues returns the values of grid point i. Points are numbered in row-major
// order: the last parameter changes fastest.
func PointValues(params []Param, i int) []string {
	vals := make([]string, len(params))
	for j := len(params) - 1; j >= 0; j-- {
		n := len(params[j].Values)
		vals[j] = params[j].Values[i%n]
		i /= n
	}
	return vals
}

// Shard is the share K of N of a grid: the points whose index i has i mod N = K−1.
// Dealing points out in turn rather than in blocks spreads cheap and costly corners of
// the grid over the shards.
type Shard struct {
	K int `json:"k"`
	N int `json:"n"`
}

// ParseShard reads "K/N" with 1 <= K <= N.
func ParseShard(s string) (Shard, error) {
	k, n, ok := strings.Cut(s, "/")
	sh := Shard{}
	var err1, err2 error
	sh.K, err1 = strconv.Atoi(k)
	sh.N, err2 = strconv.Atoi(n)
	if !ok || err1 != nil || err2 != nil || sh.N < 1 || sh.K < 1 || sh.K > sh.N {
		return Shard{}, fmt.Errorf("want K/N with 1 <= K <= N, such as 2/3, got %q", s)
	}
	return sh, nil
}

// Owns reports whether grid point i belongs to the shard.
func (s Shard) Owns(i int) bool { return i%s.N == s.K-1 }

// Spec is what a sweep runs: the same for every shard of one sweep.
type Spec struct {
	Scenario string `json:"scenario"`
	// SHA256 is the hash of the scenario's text, so that shards run on different versions
	// of a file cannot be merged unnoticed (its path may differ from machine to machine).
	SHA256 string `json:"sha256"`
	// Seed is the --seed the sweep was run with, if any (a seed parameter wins over it).
	Seed       *uint64  `json:"seed,omitempty"`
	Algorithms []string `json:"algorithms,omitempty"`
	Params     []Param  `json:"params"`
	Points     int      `json:"points"`
}

// Row is the outcome at one grid point.
type Row struct {
	Point   int             `json:"point"`
	Values  []string        `json:"values"`
	Seed    uint64          `json:"seed"`
	Policy  report.Policy   `json:"policy"`
	Results []report.Result `json:"results"`
}

// Results are the rows of a sweep, or of one shard of it, in grid order.
type Results struct {
	Sweep Spec `json:"sweep"`
	// Shard is set on a partial results file; a whole sweep (or a merge) has none.
	Shard *Shard `json:"shard,omitempty"`
	Rows  []Row  `json:"rows"`
}

// Options steer a sweep run.
type Options struct {
	// Algorithms replaces the scenario's list when not empty.
	Algorithms []string
	// Workers is how many grid points run at once; zero means GOMAXPROCS. The results
	// do not depend on it.
	Workers int
	// Shard, when not nil, runs only that share of the grid.
	Shard *Shard
	// Seed, when not nil, replaces the scenario's seed (a seed parameter wins over it).
	Seed *uint64
	// Context, when not nil, stops the sweep once it is done: the points running stop
	// between two events, the others do not start, and Run returns its cause.
	Context context.Context
	// Store is how the points talk to the store of a scenario whose cluster names one
	// (run.Options.Store).
	Store store.Options
}

// Run runs sc at every grid point of params (or of the shard's share) and returns the
// rows in grid order.
func Run(sc *scenario.Scenario, params []Param, o Options) (*Results, error) {
	if len(params) == 0 {
		return nil, errors.New("a sweep needs at least one parameter")
	}
	if n := Size(params); n > MaxPoints {
		return nil, fmt.Errorf("the grid has more than %d points; sweep fewer values", MaxPoints)
	}
	seen := map[string]bool{}
	for _, p := range params {
		if seen[p.Name] {
			return nil, fmt.Errorf("parameter %s given twice", p.Name)
		}
		seen[p.Name] = true
	}
	res := &Results{
		Sweep: Spec{Scenario: sc.Name, SHA256: fmt.Sprintf("%x", sha256.Sum256([]byte(sc.Text))),
			Seed: o.Seed, Algorithms: o.Algorithms, Params: params, Points: Size(params)},
		Shard: o.Shard,
	}
	var points []int
	for i := range res.Sweep.Points {
		if o.Shard == nil || o.Shard.Owns(i) {
			points = append(points, i)
		}
	}
	res.Rows = make([]Row, len(points))
	// Each point keeps its own error, so that when several fail the one reported is the
	// first in grid order whatever the timing.
	err := pool.Each(len(points), o.Workers, func(j int) error {
		if o.Context != nil && o.Context.Err() != nil {
			return context.Cause(o.Context)
		}
		var err error
		res.Rows[j], err = runPoint(sc, params, points[j], o)
		return err
	})
	if o.Context != nil && o.Context.Err() != nil {
		return nil, context.Cause(o.Context)
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}

// runPoint runs grid point i on one core; the sweep's parallelism is across points.
func runPoint(sc *scenario.Scenario, params []Param, i int, o Options) (Row, error) {
	vals := PointValues(params, i)
	s := setting{opts: run.Options{Algorithms: o.Algorithms, Seed: o.Seed, Workers: 1, Context: o.Context, Store: o.Store}}
	for j, p := range params {
		if err := apply(&s, p.Name, vals[j]); err != nil {
			return Row{}, fmt.Errorf("%s: %w", p.Name, err)
		}
	}
	point := sc
	if s.cluster.set() {
		var err error
		if point, err = s.cluster.on(sc); err != nil {
			return Row{}, err
		}
	}
	if s.duration > 0 {
		cp := *point
		cp.Duration = scenario.Duration(s.duration)
		point = &cp
	}
	rep, err := run.Run(point, s.opts)
	if err != nil {
		return Row{}, fmt.Errorf("point %d (%s): %w", i, describe(params, vals), err)
	}
	return Row{Point: i, Values: vals, Seed: rep.Seed, Policy: rep.Policy, Results: rep.Results}, nil
}

func describe(params []Param, vals []string) string {
	parts := make([]string, len(params))
	for j, p := range params {
		parts[j] = p.Name + "=" + vals[j]
	}
	return strings.Join(parts, " ")
}
