package scenario

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rlsim/rlsim/cluster"
)

// ClusterSpec is the scenario's cluster section: the fleet the limit runs on.
type ClusterSpec struct {
	// Nodes is the node count at the start (default 1). Balancer, Placement, Lease,
	// LeaseTTL, Guard, StoreTimeout and Clock left out take cluster.Config's defaults.
	Nodes     *int   `yaml:"nodes"`
	Balancer  string `yaml:"balancer"`  // round-robin (default), random, hash
	Placement string `yaml:"placement"` // one of cluster.Placements(); "" is the default
	// LocalRecompute makes local nodes take L/N of the new node count on scaling.
	LocalRecompute bool `yaml:"local_recompute"`
	// Lease is the tokens a leased node borrows at once (default 10), LeaseTTL how long
	// they stay spendable (default the policy's window).
	Lease    int64    `yaml:"lease"`
	LeaseTTL Duration `yaml:"lease_ttl"`
	// Guard is the node-local guard per key (two-tier, fail-open-local); default ⌈2L/N⌉
	// per window, and a guard without a window takes the policy's.
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
	// DesignFields are the owner and global-sync placements' settings (designs.go), in
	// the products' terms: forward (Gubernator's BATCHING or NO_BATCHING), batch_wait and
	// batch_limit (its BatchWait, BatchLimit), sync (with owners its GLOBAL_SYNC_WAIT, with
	// the store Kong's sync_rate), global_batch_limit (GLOBAL_BATCH_LIMIT) and behaviors
	// (DRAIN_OVER_LIMIT).
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
	// What only the file says is checked here; every field a fleet's configuration holds
	// is checked once, by cluster.Config.Validate on the fleets the run builds
	// (checkFleet), placed in the file where its value came from.
	c := s.Cluster
	if err := s.checkNonatomicKey(file, "cluster", c.NonatomicKey); err != nil {
		return err
	}
	if g := c.Guard; g != nil {
		// A guard without a window takes the run's (cluster.Config.Guard).
		switch {
		case g.Limit <= 0:
			return s.fail(file, "cluster.guard.limit", "must be a positive number of units, got %d", g.Limit)
		case g.Window < 0:
			return s.fail(file, "cluster.guard.window", "must be a positive duration, got %s", time.Duration(g.Window))
		case g.Burst < 0:
			return s.fail(file, "cluster.guard.burst", "must not be negative, got %d", g.Burst)
		}
	}
	if err := s.checkTiming(file, "cluster", c.StoreTimeout); err != nil {
		return err
	}
	if !slices.Contains(storeFaces, c.Store) {
		return s.fail(file, "cluster.store", "unknown store %q (want one of %s)", c.Store, strings.Join(storeFaces, ", "))
	}
	if c.Store == "redis" && c.RedisURL == "" {
		return s.fail(file, "cluster.redis_url", "is required with store: redis")
	}
	for i, st := range c.Scale {
		if !st.At.Set {
			return s.fail(file, fmt.Sprintf("cluster.scale[%d].at", i), "is required")
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
		if err := s.checkNonatomicKey(file, f, or(v.NonatomicKey, c.NonatomicKey)); err != nil {
			return err
		}
		if v.OutagePolicy != "" && !slices.Contains(cluster.OutagePolicies, v.OutagePolicy) {
			return s.fail(file, f+".outage_policy", "unknown policy %q (want one of %s)", v.OutagePolicy, strings.Join(cluster.OutagePolicies, ", "))
		}
		if err := s.checkTiming(file, f, v.StoreTimeout); err != nil {
			return err
		}
	}
	if err := s.validateDesigns(file); err != nil {
		return err
	}
	if err := s.validateFaults(file); err != nil {
		return err
	}
	// The section as written (faults and all) first, then each variant.
	fleets := append([]Fleet{s.baseFleet()}, s.Fleets()...)
	for _, f := range fleets {
		if err := s.checkFleet(file, f); err != nil {
			return err
		}
	}
	return nil
}

// checkTiming checks a store timeout of the cluster section or a variant: the file may
// not write 0s, which the fleet would take as its default.
func (s *Scenario) checkTiming(file, field string, timeout *Duration) error {
	if timeout != nil && *timeout <= 0 {
		return s.fail(file, field+".store_timeout", "must be a positive duration")
	}
	return nil
}

// checkNonatomicKey checks the nonatomic_key of the cluster section or a variant.
func (s *Scenario) checkNonatomicKey(file, field, nonatomicKey string) error {
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

// UseRedis points a cluster scenario's shared store at the Redis server at url, as
// `store: redis` with that redis_url would (rlsim run/compare --redis).
func (s *Scenario) UseRedis(url string) error {
	if s.Cluster == nil {
		return fmt.Errorf("scenario %s has no cluster section, so no shared store to put on Redis", s.Name)
	}
	s.Cluster.Store, s.Cluster.RedisURL = "redis", url
	return nil
}
