package scenario

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/cluster"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/store"
)

// ClusterSpec is the scenario's cluster section: the fleet the limit runs on.
type ClusterSpec struct {
	// Nodes is the node count at the start (default 1).
	Nodes     *int   `yaml:"nodes"`
	Balancer  string `yaml:"balancer"`  // round-robin (default), random, hash
	Placement string `yaml:"placement"` // local (default), shared, two-tier, leased, shared-nonatomic, shared-racy
	// LocalRecompute makes local nodes take L/N of the new node count on scaling.
	LocalRecompute bool `yaml:"local_recompute"`
	// Lease is the tokens a leased node borrows at once (default 10), LeaseTTL how long
	// they stay spendable (default the policy's window).
	Lease    int64    `yaml:"lease"`
	LeaseTTL Duration `yaml:"lease_ttl"`
	// Guard is the node-local guard per key (two-tier, fail-open-local); default ⌈2L/N⌉.
	Guard *PolicySpec `yaml:"guard"`
	// NonatomicKey is ttl-window (default: the counter is named by client only and its
	// window is its TTL) or timestamped (the name carries the window index).
	NonatomicKey string      `yaml:"nonatomic_key"`
	Scale        []ScaleSpec `yaml:"scale"`
	// Store is the shared store's face: model (default), miniredis, or redis at RedisURL.
	Store    string `yaml:"store"`
	RedisURL string `yaml:"redis_url"`
	// Prefix is put before every store key (default "rlsim:").
	Prefix string `yaml:"prefix"`
	// StoreTimeout is how long a node's store client waits before giving up on a store
	// that is down (default 50ms); Breaker puts a circuit breaker on each node's client.
	StoreTimeout *Duration    `yaml:"store_timeout"`
	Breaker      *BreakerSpec `yaml:"breaker"`
	// Clock is whose clock the shared store decides by: node (default) or store.
	Clock string `yaml:"clock"`
	// Variants run the scenario once per entry, each overriding some fields, and put the
	// results side by side; without variants the cluster runs as written.
	Variants []VariantSpec `yaml:"variants"`
	// DesignFields are the owner and global-sync placements' settings (designs.go).
	DesignFields `yaml:",inline"`
}

// ScaleSpec changes the node count at a time.
type ScaleSpec struct {
	At    Offset `yaml:"at"`
	Nodes int    `yaml:"nodes"`
}

// VariantSpec is one variant of the fleet: a name and the fields it changes.
type VariantSpec struct {
	Name           string   `yaml:"name"`
	Nodes          *int     `yaml:"nodes"`
	Balancer       string   `yaml:"balancer"`
	Placement      string   `yaml:"placement"`
	LocalRecompute *bool    `yaml:"local_recompute"`
	Lease          *int64   `yaml:"lease"`
	NonatomicKey   string   `yaml:"nonatomic_key"`
	OutagePolicy   string   `yaml:"outage_policy"`
	Crash          *float64 `yaml:"crash_probability"`
	// Latency replaces the store's round trip (faults: latency) in this variant.
	Latency      *Duration    `yaml:"latency"`
	StoreTimeout *Duration    `yaml:"store_timeout"`
	Breaker      *BreakerSpec `yaml:"breaker"`
	Clock        string       `yaml:"clock"`
	// Skew replaces the skew fault's max (node clocks spread over ±skew).
	Skew *Duration `yaml:"skew"`
	// DesignOverrides change the designs' settings and faults (designs.go).
	DesignOverrides `yaml:",inline"`
}

// BreakerSpec is a circuit breaker on each node's store client: it opens after Failures
// consecutive failed calls and, OpenFor later, lets one probe call through.
type BreakerSpec struct {
	Failures int      `yaml:"failures"`
	OpenFor  Duration `yaml:"open_for"`
}

func (b *BreakerSpec) config() *cluster.Breaker {
	if b == nil {
		return nil
	}
	return &cluster.Breaker{Failures: b.Failures, OpenFor: time.Duration(b.OpenFor)}
}

// FaultSpec is one entry of the faults list: exactly one fault.
type FaultSpec struct {
	Outage    *OutageSpec    `yaml:"outage"`
	Latency   *LatencySpec   `yaml:"latency"`
	Skew      *SkewSpec      `yaml:"skew"`
	Crash     *CrashSpec     `yaml:"crash_between_incr_expire"`
	Failover  *FailoverSpec  `yaml:"failover"`
	Reshard   *ReshardSpec   `yaml:"reshard"`
	Eviction  *EvictionSpec  `yaml:"eviction"`
	Partition *PartitionSpec `yaml:"partition"`
}

// OutageSpec makes the store unreachable from At for For; nodes follow Policy meanwhile.
type OutageSpec struct {
	At     Offset   `yaml:"at"`
	For    Duration `yaml:"for"`
	Policy string   `yaml:"policy"`
}

// LatencySpec is the store's round-trip time.
type LatencySpec struct {
	RoundTrip Duration `yaml:"round_trip"`
}

// SkewSpec spreads node clocks over [−Max, +Max].
type SkewSpec struct {
	Max Duration `yaml:"max"`
}

// CrashSpec is the chance a process dies between INCR and EXPIRE.
type CrashSpec struct {
	Probability float64 `yaml:"probability"`
}

var nonatomicKeys = []string{"ttl-window", "timestamped"}
var storeFaces = []string{"model", "miniredis", "redis"}

// validateCluster checks the cluster and faults sections; faults need a cluster.
func (s *Scenario) validateCluster(file string) error {
	if s.Cluster == nil {
		if len(s.Faults) > 0 {
			return s.fail(file, "faults", "faults need a cluster section")
		}
		return nil
	}
	c := s.Cluster
	if c.Nodes == nil {
		one := 1
		c.Nodes = &one
	}
	if c.Balancer == "" {
		c.Balancer = "round-robin"
	}
	if c.Placement == "" {
		c.Placement = "local"
	}
	if c.NonatomicKey == "" {
		c.NonatomicKey = "ttl-window"
	}
	if c.Store == "" {
		c.Store = "model"
	}
	if c.Prefix == "" {
		c.Prefix = "rlsim:"
	}
	if c.Clock == "" {
		c.Clock = "node"
	}
	if !slices.Contains(cluster.Clocks, c.Clock) {
		return s.fail(file, "cluster.clock", "unknown clock %q (want one of %s)", c.Clock, strings.Join(cluster.Clocks, ", "))
	}
	if err := s.checkFleetFields(file, "cluster", *c.Nodes, c.Balancer, c.Placement, c.NonatomicKey); err != nil {
		return err
	}
	if c.Lease < 0 {
		return s.fail(file, "cluster.lease", "must not be negative, got %d", c.Lease)
	}
	if c.LeaseTTL < 0 {
		return s.fail(file, "cluster.lease_ttl", "must not be negative")
	}
	if c.Guard != nil {
		if c.Guard.Window == 0 {
			c.Guard.Window = s.Policy.Window
		}
		if err := s.validatePolicy(file, "cluster.guard", *c.Guard); err != nil {
			return err
		}
	}
	if err := s.checkTiming(file, "cluster", c.StoreTimeout, c.Breaker); err != nil {
		return err
	}
	if !slices.Contains(storeFaces, c.Store) {
		return s.fail(file, "cluster.store", "unknown store %q (want one of %s)", c.Store, strings.Join(storeFaces, ", "))
	}
	if c.Store == "redis" && c.RedisURL == "" {
		return s.fail(file, "cluster.redis_url", "is required with store: redis")
	}
	epoch := s.EpochTime()
	for i, st := range c.Scale {
		f := fmt.Sprintf("cluster.scale[%d]", i)
		if !st.At.Set {
			return s.fail(file, f+".at", "is required")
		}
		if st.Nodes < 1 || st.Nodes > cluster.MaxNodes {
			return s.fail(file, f+".nodes", "must be between 1 and %d, got %d", cluster.MaxNodes, st.Nodes)
		}
		if i > 0 && st.At.resolve(epoch) < c.Scale[i-1].At.resolve(epoch) {
			return s.fail(file, f+".at", "scale steps must be in time order")
		}
	}
	names := map[string]bool{}
	for i, v := range c.Variants {
		f := fmt.Sprintf("cluster.variants[%d]", i)
		if v.Name == "" {
			return s.fail(file, f+".name", "is required")
		}
		if names[v.Name] {
			return s.fail(file, f+".name", "variant %q is named twice", v.Name)
		}
		names[v.Name] = true
		nodes := *c.Nodes
		if v.Nodes != nil {
			nodes = *v.Nodes
		}
		if err := s.checkFleetFields(file, f, nodes, or(v.Balancer, c.Balancer), or(v.Placement, c.Placement), or(v.NonatomicKey, c.NonatomicKey)); err != nil {
			return err
		}
		if v.Lease != nil && *v.Lease < 0 {
			return s.fail(file, f+".lease", "must not be negative")
		}
		if v.OutagePolicy != "" && !slices.Contains(cluster.OutagePolicies, v.OutagePolicy) {
			return s.fail(file, f+".outage_policy", "unknown policy %q (want one of %s)", v.OutagePolicy, strings.Join(cluster.OutagePolicies, ", "))
		}
		if v.Crash != nil && (*v.Crash < 0 || *v.Crash > 1) {
			return s.fail(file, f+".crash_probability", "must be between 0 and 1, got %g", *v.Crash)
		}
		if v.Latency != nil && *v.Latency < 0 {
			return s.fail(file, f+".latency", "must not be negative")
		}
		if err := s.checkTiming(file, f, v.StoreTimeout, v.Breaker); err != nil {
			return err
		}
		if v.Clock != "" && !slices.Contains(cluster.Clocks, v.Clock) {
			return s.fail(file, f+".clock", "unknown clock %q (want one of %s)", v.Clock, strings.Join(cluster.Clocks, ", "))
		}
		if v.Skew != nil && *v.Skew < 0 {
			return s.fail(file, f+".skew", "must not be negative")
		}
	}
	if err := s.validateDesigns(file); err != nil {
		return err
	}
	var lastOutageEnd time.Duration
	for i, ft := range s.Faults {
		f := fmt.Sprintf("faults[%d]", i)
		n := 0
		for _, set := range []bool{ft.Outage != nil, ft.Latency != nil, ft.Skew != nil, ft.Crash != nil,
			ft.Failover != nil, ft.Reshard != nil, ft.Eviction != nil, ft.Partition != nil} {
			if set {
				n++
			}
		}
		if n != 1 {
			return s.fail(file, f, "each fault entry holds exactly one fault (outage, latency, skew, crash_between_incr_expire, failover, reshard, eviction or partition), found %d", n)
		}
		if err := s.validateDesignFault(file, f, &s.Faults[i], &lastOutageEnd); err != nil {
			return err
		}
		switch {
		case ft.Outage != nil:
			o := ft.Outage
			if !o.At.Set {
				return s.fail(file, f+".outage.at", "is required")
			}
			if o.For <= 0 {
				return s.fail(file, f+".outage.for", "must be a positive duration")
			}
			if o.Policy == "" {
				o.Policy = "fail-closed"
			}
			if !slices.Contains(cluster.OutagePolicies, o.Policy) {
				return s.fail(file, f+".outage.policy", "unknown policy %q (want one of %s)", o.Policy, strings.Join(cluster.OutagePolicies, ", "))
			}
			at := o.At.resolve(epoch)
			if at < lastOutageEnd {
				return s.fail(file, f+".outage.at", "outages must be in time order and not overlap")
			}
			lastOutageEnd = at + time.Duration(o.For)
		case ft.Latency != nil:
			if ft.Latency.RoundTrip < 0 {
				return s.fail(file, f+".latency.round_trip", "must not be negative")
			}
		case ft.Skew != nil:
			if ft.Skew.Max < 0 {
				return s.fail(file, f+".skew.max", "must not be negative")
			}
		case ft.Crash != nil:
			if p := ft.Crash.Probability; p < 0 || p > 1 {
				return s.fail(file, f+".crash_between_incr_expire.probability", "must be between 0 and 1, got %g", p)
			}
		}
	}
	return nil
}

// checkTiming checks a store timeout and a breaker of the cluster section or a variant.
func (s *Scenario) checkTiming(file, field string, timeout *Duration, b *BreakerSpec) error {
	if timeout != nil && *timeout <= 0 {
		return s.fail(file, field+".store_timeout", "must be a positive duration")
	}
	if b == nil {
		return nil
	}
	if b.Failures < 1 {
		return s.fail(file, field+".breaker.failures", "must be at least 1, got %d", b.Failures)
	}
	if b.OpenFor <= 0 {
		return s.fail(file, field+".breaker.open_for", "must be a positive duration")
	}
	return nil
}

func (s *Scenario) checkFleetFields(file, field string, nodes int, balancer, placement, nonatomicKey string) error {
	if nodes < 1 || nodes > cluster.MaxNodes {
		return s.fail(file, field+".nodes", "must be between 1 and %d, got %d", cluster.MaxNodes, nodes)
	}
	if !slices.Contains(cluster.Balancers, balancer) {
		return s.fail(file, field+".balancer", "unknown balancer %q (want one of %s)", balancer, strings.Join(cluster.Balancers, ", "))
	}
	if !slices.Contains(cluster.Placements, placement) {
		return s.fail(file, field+".placement", "unknown placement %q (want one of %s)", placement, strings.Join(cluster.Placements, ", "))
	}
	if !slices.Contains(nonatomicKeys, nonatomicKey) {
		return s.fail(file, field+".nonatomic_key", "unknown key kind %q (want ttl-window or timestamped)", nonatomicKey)
	}
	return nil
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// fleetVariant is one fleet a cluster scenario runs.
type fleetVariant struct {
	name string
	cfg  cluster.Config
}

// fleetVariants builds the fleet configurations of a cluster scenario, in file order.
func (s *Scenario) fleetVariants(pol algorithms.Policy) []fleetVariant {
	c := s.Cluster
	epoch := s.EpochTime()
	base := cluster.Config{
		Nodes: *c.Nodes, Balancer: c.Balancer, Placement: c.Placement, LocalRecompute: c.LocalRecompute,
		Lease: c.Lease, LeaseTTL: time.Duration(c.LeaseTTL), TTLWindowKey: c.NonatomicKey == "ttl-window",
		Clock: c.Clock, Epoch: epoch.UnixNano(), Breaker: c.Breaker.config(),
	}
	if c.StoreTimeout != nil {
		base.StoreTimeout = time.Duration(*c.StoreTimeout)
	}
	if c.Guard != nil {
		base.Guard = c.Guard.Policy()
	}
	for _, st := range c.Scale {
		base.Scale = append(base.Scale, cluster.Scale{At: st.At.resolve(epoch), Nodes: st.Nodes})
	}
	for _, ft := range s.Faults {
		switch {
		case ft.Outage != nil:
			base.Outages = append(base.Outages, cluster.Outage{At: ft.Outage.At.resolve(epoch), For: time.Duration(ft.Outage.For), Policy: ft.Outage.Policy})
		case ft.Latency != nil:
			base.Latency = time.Duration(ft.Latency.RoundTrip)
		case ft.Skew != nil:
			base.Skew = time.Duration(ft.Skew.Max)
		case ft.Crash != nil:
			base.CrashProbability = ft.Crash.Probability
		}
	}
	s.designBase(&base)
	if len(c.Variants) == 0 {
		return []fleetVariant{{name: c.Placement, cfg: base}}
	}
	var out []fleetVariant
	for _, v := range c.Variants {
		cfg := base
		cfg.Outages = slices.Clone(base.Outages)
		if v.Nodes != nil {
			cfg.Nodes = *v.Nodes
		}
		cfg.Balancer = or(v.Balancer, cfg.Balancer)
		cfg.Placement = or(v.Placement, cfg.Placement)
		if v.LocalRecompute != nil {
			cfg.LocalRecompute = *v.LocalRecompute
		}
		if v.Lease != nil {
			cfg.Lease = *v.Lease
		}
		if v.NonatomicKey != "" {
			cfg.TTLWindowKey = v.NonatomicKey == "ttl-window"
		}
		if v.Crash != nil {
			cfg.CrashProbability = *v.Crash
		}
		if v.Latency != nil {
			cfg.Latency = time.Duration(*v.Latency)
		}
		if v.StoreTimeout != nil {
			cfg.StoreTimeout = time.Duration(*v.StoreTimeout)
		}
		if v.Breaker != nil {
			cfg.Breaker = v.Breaker.config()
		}
		cfg.Clock = or(v.Clock, cfg.Clock)
		if v.Skew != nil {
			cfg.Skew = time.Duration(*v.Skew)
		}
		if v.OutagePolicy != "" {
			for i := range cfg.Outages {
				cfg.Outages[i].Policy = v.OutagePolicy
			}
		}
		designVariant(&cfg, v)
		out = append(out, fleetVariant{name: v.Name, cfg: cfg})
	}
	return out
}

// clusterAlgorithms are the algorithms a fleet variant runs: the placements with a fixed
// mechanism (leased, shared-nonatomic) run once; the shared ones only the algorithms the
// store has a script for, shared-racy those with a read-decide-write form, global-sync
// those kept as window counts, and a store under memory pressure those whose keys it has
// a memory model of (not the sliding log's sorted set); the others are left out of that
// variant's rows.
func clusterAlgorithms(cfg cluster.Config, algs []string) []string {
	switch cfg.Placement {
	case "leased":
		return []string{"token-bucket"}
	case "shared-nonatomic":
		return []string{"fixed-window"}
	case "shared-racy":
		return keep(algs, cluster.RacyAlgorithms)
	case "global-sync":
		return keep(algs, cluster.GlobalAlgorithms)
	case "shared", "two-tier":
		algs = keep(algs, store.Algorithms)
		if cfg.Eviction != nil {
			algs = slices.DeleteFunc(slices.Clone(algs), func(a string) bool { return a == "sliding-log" })
		}
		return algs
	}
	return algs
}

// keep is the algorithms of algs that supported holds, in algs' order.
func keep(algs, supported []string) []string {
	var out []string
	for _, a := range algs {
		if slices.Contains(supported, a) {
			out = append(out, a)
		}
	}
	return out
}

// UseRedis points a cluster scenario's shared store at the Redis server at url, as
// `store: redis` with that redis_url would (rlsim run/compare --redis).
func (s *Scenario) UseRedis(url string) error {
	if s.Cluster == nil {
		return fmt.Errorf("scenario %s has no cluster section, so no shared store to put on Redis", s.Name)
	}
	s.Cluster.Store, s.Cluster.RedisURL = "redis", url
	return nil
}

// openStore opens the scenario's store face for one run; keys go under prefix.
func (s *Scenario) openStore() (store.Store, error) {
	switch s.Cluster.Store {
	case "miniredis":
		return store.NewMiniredis()
	case "redis":
		r, err := store.NewRedis(s.Cluster.RedisURL)
		if err != nil {
			return nil, fmt.Errorf("scenario %s: cluster.redis_url: %w", s.Name, err)
		}
		return r, nil
	}
	return store.NewModel(), nil
}

// runFleets runs every fleet variant with every algorithm it takes.
func runFleets(sc *Scenario, rep *report.Report, pol algorithms.Policy, layers []LimitSpec, algs []string, seed uint64, o Options) error {
	rep.Results = []report.Result{} // a list in JSON even when no algorithm fits a variant
	for vi, v := range sc.fleetVariants(pol) {
		for _, alg := range clusterAlgorithms(v.cfg, algs) {
			res, err := runFleet(sc, v, vi, alg, pol, layers, seed, o)
			if err != nil {
				return err
			}
			rep.Results = append(rep.Results, res)
		}
	}
	return nil
}

func runFleet(sc *Scenario, v fleetVariant, vi int, alg string, pol algorithms.Policy, layers []LimitSpec, seed uint64, o Options) (report.Result, error) {
	st, err := sc.openStore()
	if err != nil {
		return report.Result{}, err
	}
	defer st.Close()
	redisFace, onRedis := st.(*store.Redis)
	if onRedis && o.StoreStats != nil {
		defer func() {
			o.StoreStats.ScriptCalls += redisFace.ScriptCalls()
			o.StoreStats.RoundTrips += redisFace.RoundTrips()
		}()
	}
	cfg := v.cfg
	cfg.Prefix = fmt.Sprintf("%s%s:%d:%s:", sc.Cluster.Prefix, sc.Name, vi, alg)
	if r, ok := st.(*store.Redis); ok && st.Name() == "redis" {
		// Touch only keys this run writes: refuse a prefix someone already uses, and
		// delete what the run wrote when it ends.
		keys, err := r.Keys(cfg.Prefix)
		if err != nil {
			return report.Result{}, err
		}
		if len(keys) > 0 {
			return report.Result{}, fmt.Errorf("scenario %s: keys under %q already exist on the Redis server; refusing to touch them", sc.Name, cfg.Prefix)
		}
		defer func() {
			if keys, err := r.Keys(cfg.Prefix); err == nil {
				names := make([]string, len(keys))
				for i, k := range keys {
					names[i] = k.Name
				}
				r.Delete(names...)
			}
		}()
	}
	fleet, err := cluster.New(cfg, alg, pol, st, NewRNG(seed^uint64(vi+1)*0x9e3779b97f4a7c15))
	if err != nil {
		return report.Result{}, fmt.Errorf("scenario %s: cluster variant %s, %s: %w", sc.Name, v.name, alg, err)
	}
	fleet.SetLabel(v.name)
	var res report.Result
	if onRedis && o.Pipeline > 1 && fleet.Pipelines() {
		res, err = runFleetPipelined(sc, alg, layers, seed, o.Decisions, fleet, o.Pipeline)
	} else {
		res, err = runOneWith(sc, alg, layers, seed, o.Decisions, nil, fleet)
	}
	if err != nil {
		return res, err
	}
	res.Algorithm = fleet.Algorithm()
	d, err := fleet.Finish(v.name)
	if err != nil {
		return res, fmt.Errorf("scenario %s: cluster variant %s, %s: store: %w", sc.Name, v.name, alg, err)
	}
	d.EffectiveLimit = res.PeakWindowAdmitted
	designs := fleet.Designs()
	d.Designs = designFigures(v.cfg, designs)
	d.LostWrites += designs.LostWrites
	d.Events = fleetEvents(v.cfg)
	d.Skew = report.Duration(v.cfg.Skew)
	if v.cfg.UsesStore() {
		d.Clock = v.cfg.Clock
	}
	res.Distributed = d
	return res, nil
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
	for _, f := range cfg.Failovers {
		out = append(out, report.FleetEvent{At: f.At, Label: fmt.Sprintf("failover (lag %s)", f.Lag)})
	}
	for _, r := range cfg.Reshards {
		out = append(out, report.FleetEvent{At: r.At, For: r.For, Label: "slots on the move"})
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
