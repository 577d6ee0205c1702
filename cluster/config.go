// Package cluster runs a rate limit on a fleet of nodes behind a load balancer: where the
// counters live (placements), how requests reach nodes (balancers), node counts that
// change mid-run, and the faults of a shared store (outages, latency, clock skew, a crash
// between INCR and EXPIRE). A Fleet decides each request the way the fleet would; what
// that did to the advertised limit is measured outside (report.FleetMeter), from the
// decisions the fleet reports (Fleet.Observe). Deciding depends on nothing that renders.
package cluster

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rlsim/rlsim/algorithms"
)

// Balancers are the ways a request picks its node.
var Balancers = []string{"round-robin", "random", "hash"}

// OutagePolicies are what nodes do while the store is down.
//
//	fail-open        admit everything
//	fail-closed      refuse everything
//	fail-open-local  admit what the node-local guard admits
var OutagePolicies = []string{"fail-open", "fail-closed", "fail-open-local"}

// Clocks are the clocks a shared placement's store decides by.
//
//	node   each node passes its own clock, skew included (the default)
//	store  the script reads the store's clock (redis.call('TIME')); in virtual time the
//	       store's clock is the true virtual clock, so node skew no longer matters to it
var Clocks = []string{"node", "store"}

// Config describes a fleet.
type Config struct {
	// Nodes is the node count at t=0 (≥ 1).
	Nodes int
	// Balancer is one of Balancers ("" is round-robin); hash routes by the client key
	// (FNV-1a).
	Balancer string
	// Placement is one of Placements ("" is the default, PlacementKind.Default).
	Placement string
	// LocalRecompute makes local nodes take L/N of the new count when it changes (their
	// counters start afresh); without it every node keeps L/N of the initial count.
	LocalRecompute bool
	// Lease is the tokens a leased node borrows at once (default 10); LeaseTTL is how long
	// borrowed tokens stay spendable (default the policy's window).
	Lease    int64
	LeaseTTL time.Duration
	// Guard is the node-local guard's policy per key (two-tier, fail-open-local); zero
	// means twice the node's share: limit ⌈2L/N⌉ per window. A guard with a limit and no
	// window takes the policy's window.
	Guard algorithms.Policy
	// TTLWindowKey, for shared-nonatomic, names the counter by client only, its window
	// being its TTL; otherwise the key carries the window index.
	TTLWindowKey bool
	// Scale changes the node count at given times, in order.
	Scale []Scale
	// Outages are the spans the store is down, in order, not overlapping.
	Outages []Outage
	// Latency is the store's round-trip time, added to each decision per round trip.
	Latency time.Duration
	// Skew spreads node clocks over [−Skew, +Skew]: node i runs at Skew·(2·frac(i·φ) − 1)
	// from the true time (φ the golden ratio), fixed for the node's life.
	Skew time.Duration
	// Clock is one of Clocks ("" is node): whose clock the shared store decides by. The
	// node-local parts (local limits, guards, a lease's lifetime) keep the node's clock.
	Clock string
	// CrashProbability is the chance that the process dies between INCR and EXPIRE on a
	// request that created its key (shared-nonatomic).
	CrashProbability float64
	// Epoch is the Unix time (ns) of t=0, so Scale and Outages can be given as offsets.
	Epoch int64
	// Prefix is put before every store key.
	Prefix string
	// StoreTimeout is how long a node's store client waits for a reply before it gives
	// up; a decision that tries the store during an outage waits it before the outage
	// policy decides. Zero means DefaultStoreTimeout.
	StoreTimeout time.Duration
	// Breaker, when set, puts a circuit breaker on each node's store client (breaker.go).
	Breaker *Breaker

	// VNodes is the points each node puts on the consistent-hash ring of the owner and
	// global-sync placements (zero means DefaultVNodes).
	VNodes int
	// Forward is one of Forwards ("" is batched, Gubernator's default); BatchWait and
	// BatchLimit shape a batch (zero means DefaultBatchWait, DefaultBatchLimit).
	Forward    string
	BatchWait  time.Duration
	BatchLimit int
	// PeerLatency is the round trip between two nodes (owner, global-sync to owners).
	PeerLatency time.Duration
	// Sync is how often a global-sync node exchanges its hits with the target; zero
	// exchanges on every decision, synchronously (with owners: GLOBAL off, every request
	// forwarded to its owner). With the store it is Kong's sync_rate, at least
	// KongMinSync; with owners Gubernator's GlobalSyncWait (DefaultSync). SyncTo is one of
	// SyncTargets ("" is owner).
	Sync   time.Duration
	SyncTo string
	// GlobalBatchLimit is Gubernator's GLOBAL_BATCH_LIMIT (zero means
	// DefaultGlobalBatchLimit); Behaviors its request behaviours (global-sync to owners).
	GlobalBatchLimit int
	Behaviors        []string
	// Failovers and Reshards are the store's failovers and slot moves, in time order
	// (failover.go); Eviction puts the store under memory pressure (eviction.go).
	Failovers []Failover
	Reshards  []Reshard
	Eviction  *Eviction
}

// DefaultStoreTimeout is the store client's timeout when Config.StoreTimeout is zero.
const DefaultStoreTimeout = 50 * time.Millisecond

// Scale sets the node count to Nodes from At on.
type Scale struct {
	At    time.Duration
	Nodes int
}

// Outage makes the store unreachable over [At, At+For); nodes decide by Policy meanwhile.
// With Nodes > 0 it is a partition: only nodes 0..Nodes-1 are cut off — from the store
// and from the other nodes, or only from what Cut names — and the rest carry on as before.
type Outage struct {
	At, For time.Duration
	Policy  string
	Nodes   int
	// Cut is what a partition cuts its nodes off from: CutStore, CutPeers, or both ("").
	Cut string
}

// What a partition cuts its nodes off from (Outage.Cut); "" is both.
const (
	CutStore = "store"
	CutPeers = "peers"
)

// PartitionCuts are the values a scenario's partition may give for what it cuts.
var PartitionCuts = []string{"both", CutStore, CutPeers}

// MaxNodes bounds a fleet so that a typo cannot ask for a billion nodes.
const MaxNodes = 100_000

// Validate reports the first thing wrong with c, naming the field.
func (c *Config) Validate() error {
	switch {
	case c.Nodes < 1 || c.Nodes > MaxNodes:
		return fieldError("nodes", "must be between 1 and %d, got %d", MaxNodes, c.Nodes)
	case c.Balancer != "" && !slices.Contains(Balancers, c.Balancer):
		return fieldError("balancer", "unknown balancer %q (want one of %s)", c.Balancer, strings.Join(Balancers, ", "))
	case PlacementOf(c.Placement) == nil:
		return fieldError("placement", "unknown placement %q (want one of %s)", c.Placement, strings.Join(Placements(), ", "))
	case c.Lease < 0:
		return fieldError("lease", "must not be negative, got %d", c.Lease)
	case c.LeaseTTL < 0:
		return fieldError("lease_ttl", "must not be negative")
	case c.Latency < 0:
		return fieldError("latency", "must not be negative")
	case c.Skew < 0:
		return fieldError("skew", "must not be negative")
	case c.Clock != "" && !slices.Contains(Clocks, c.Clock):
		return fieldError("clock", "unknown clock %q (want one of %s)", c.Clock, strings.Join(Clocks, ", "))
	case c.CrashProbability < 0 || c.CrashProbability > 1:
		return fieldError("crash_probability", "must be between 0 and 1, got %g", c.CrashProbability)
	case c.StoreTimeout < 0:
		return fieldError("store_timeout", "must not be negative")
	}
	if err := c.Breaker.validate(); err != nil {
		return err
	}
	if err := c.validateDesigns(); err != nil {
		return err
	}
	for i, s := range c.Scale {
		if s.Nodes < 1 || s.Nodes > MaxNodes {
			return fieldError(fmt.Sprintf("scale[%d].nodes", i), "must be between 1 and %d, got %d", MaxNodes, s.Nodes)
		}
		if i > 0 && s.At < c.Scale[i-1].At {
			return fieldError(fmt.Sprintf("scale[%d].at", i), "scale steps must be in time order")
		}
	}
	for i, o := range c.Outages {
		if o.For <= 0 {
			return fieldError(fmt.Sprintf("outages[%d].for", i), "must be a positive duration")
		}
		if o.Nodes < 0 || o.Nodes > MaxNodes {
			return fieldError(fmt.Sprintf("outages[%d].nodes", i), "must be between 0 and %d, got %d", MaxNodes, o.Nodes)
		}
		if o.Cut != "" && (o.Nodes == 0 || o.Cut != CutStore && o.Cut != CutPeers) {
			return fieldError(fmt.Sprintf("outages[%d].cut", i), "%q needs a partition (nodes > 0) and one of %s or %s", o.Cut, CutStore, CutPeers)
		}
		if !slices.Contains(OutagePolicies, o.Policy) {
			return fieldError(fmt.Sprintf("outages[%d].policy", i), "unknown policy %q (want one of %s)", o.Policy, strings.Join(OutagePolicies, ", "))
		}
		if i > 0 && o.At < c.Outages[i-1].At+c.Outages[i-1].For {
			what := "outages"
			if o.Nodes > 0 {
				what = "partitions and outages"
			}
			return fieldError(fmt.Sprintf("outages[%d].at", i), "%s must be in time order and not overlap", what)
		}
	}
	return nil
}

// WithDefaults is c with every zero field that has a default set to it, for a fleet
// deciding under policy p. It is the one place the fleet's defaults are written; New
// applies it, and a caller that labels a fleet before building it reads it too.
func (c Config) WithDefaults(p algorithms.Policy) Config {
	if c.Balancer == "" {
		c.Balancer = "round-robin"
	}
	if c.Placement == "" {
		c.Placement = PlacementOf("").Name
	}
	if c.Clock == "" {
		c.Clock = "node"
	}
	if c.Lease == 0 {
		c.Lease = 10
	}
	if c.LeaseTTL == 0 {
		c.LeaseTTL = p.Window
	}
	if c.StoreTimeout == 0 {
		c.StoreTimeout = DefaultStoreTimeout
	}
	if c.Guard.Limit == 0 && c.Nodes > 0 {
		c.Guard = algorithms.Policy{Limit: (2*p.Limit + int64(c.Nodes) - 1) / int64(c.Nodes)}
	}
	if c.Guard.Window == 0 {
		c.Guard.Window = p.Window
	}
	c.VNodes = cmp.Or(c.VNodes, DefaultVNodes)
	c.Forward = cmp.Or(c.Forward, "batched")
	c.BatchWait = cmp.Or(c.BatchWait, DefaultBatchWait)
	c.BatchLimit = cmp.Or(c.BatchLimit, DefaultBatchLimit)
	c.SyncTo = cmp.Or(c.SyncTo, SyncTargets[0])
	return c
}

// UsesStore reports whether the placement talks to the shared store
// (PlacementKind.Store; an unknown placement is taken to).
func (c *Config) UsesStore() bool {
	k := PlacementOf(c.Placement)
	return k == nil || k.Store == nil || k.Store(c)
}

// maxRingPoints bounds the consistent-hash ring: nodes × VNodes points.
const maxRingPoints = 1 << 24

// validateDesigns checks the fields of the owner and global-sync placements and of the
// store's failovers and eviction.
func (c *Config) validateDesigns() error {
	switch {
	case c.VNodes < 0:
		return fieldError("vnodes", "must not be negative, got %d", c.VNodes)
	case c.Forward != "" && !slices.Contains(Forwards, c.Forward):
		return fieldError("forward", "unknown way %q (want one of %s)", c.Forward, strings.Join(Forwards, ", "))
	case c.BatchWait < 0:
		return fieldError("batch_wait", "must not be negative")
	case c.BatchLimit < 0:
		return fieldError("batch_limit", "must not be negative, got %d", c.BatchLimit)
	case c.PeerLatency < 0:
		return fieldError("peer_latency", "must not be negative")
	case c.Sync < 0:
		return fieldError("sync", "must not be negative")
	case c.SyncTo != "" && !slices.Contains(SyncTargets, c.SyncTo):
		return fieldError("sync_to", "unknown target %q (want one of %s)", c.SyncTo, strings.Join(SyncTargets, ", "))
	case c.GlobalBatchLimit < 0 || c.GlobalBatchLimit > DefaultGlobalBatchLimit:
		return fieldError("global_batch_limit", "must be between 1 and %d (Gubernator's maxBatchSize), got %d", DefaultGlobalBatchLimit, c.GlobalBatchLimit)
	}
	for i, b := range c.Behaviors {
		if !slices.Contains(Behaviors, b) {
			return fieldError(fmt.Sprintf("behaviors[%d]", i), "unknown behaviour %q (want %s; GLOBAL is the global-sync placement, BATCHING and NO_BATCHING the owner placement's forward)", b, strings.Join(Behaviors, ", "))
		}
	}
	if k := PlacementOf(c.Placement); k != nil && k.Validate != nil {
		if err := k.Validate(c); err != nil {
			return err
		}
	}
	if err := validateFailovers(c.Failovers, c.Reshards); err != nil {
		return err
	}
	if err := c.Eviction.validate(); err != nil {
		return err
	}
	switch {
	case c.Eviction != nil && c.UsesStore() && !PlacementOf(c.Placement).Scripts:
		return fieldError("eviction", "the %s placement does not decide by the store's scripts (want one of %s)", c.Placement, strings.Join(EvictionPlacements(), ", "))
	case c.Eviction != nil && len(c.Failovers)+len(c.Reshards) > 0:
		return fieldError("eviction", "a store under memory pressure cannot also fail over or move slots in one fleet; use two variants")
	}
	return nil
}

// checkRing checks that the consistent-hash ring of the placements with owners can hold
// the most nodes the fleet runs, VNodes points each.
func checkRing(c *Config) error {
	most := c.Nodes
	for _, s := range c.Scale {
		most = max(most, s.Nodes)
	}
	if v := cmp.Or(c.VNodes, DefaultVNodes); most*v > maxRingPoints {
		return fieldError("vnodes", "%d nodes × %d points is more than the ring's %d", most, v, maxRingPoints)
	}
	return nil
}

// FieldError is what Validate reports: the field at fault, as Config names it
// ("outages[2].at", "crash_probability"), and what is wrong with it. A scenario file
// places it at the line and column the value came from.
type FieldError struct {
	Field, Msg string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

func fieldError(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}
