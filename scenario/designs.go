package scenario

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rlsim/rlsim/cluster"
)

// DesignFields are the cluster section's settings of the placements beyond the notes':
// owner (a consistent-hash ring, forwarding) and global-sync.
type DesignFields struct {
	// VNodes is the points each node puts on the ring (default 512).
	VNodes int `yaml:"vnodes"`
	// Forward is how a node sends a request to its key's owner: batched (default) or
	// direct; BatchWait (default 500µs) and BatchLimit (default 1000) shape a batch.
	Forward    string    `yaml:"forward"`
	BatchWait  *Duration `yaml:"batch_wait"`
	BatchLimit int       `yaml:"batch_limit"`
	// PeerLatency is the round trip between two nodes.
	PeerLatency Duration `yaml:"peer_latency"`
	// Sync is how often a global-sync node exchanges hits and totals (default 100ms, 0s:
	// on every decision); SyncTo is owner (default) or store. With owners Sync is
	// Gubernator's GLOBAL_SYNC_WAIT (GUBER_GLOBAL_SYNC_WAIT, 100ms since v2.2.0), with
	// the store Kong's sync_rate (at least 20ms; its -1, synchronous, is 0s).
	Sync   *Duration `yaml:"sync"`
	SyncTo string    `yaml:"sync_to"`
	// GlobalBatchLimit is Gubernator's GLOBAL_BATCH_LIMIT (default 1000, at most 1000):
	// the queued keys at which hits and broadcasts leave before the sync wait ends.
	GlobalBatchLimit int `yaml:"global_batch_limit"`
	// Behaviors are Gubernator's request behaviours the clients set: DRAIN_OVER_LIMIT.
	Behaviors []string `yaml:"behaviors"`
}

// DesignOverrides are what a variant may change of the designs' settings and faults.
type DesignOverrides struct {
	Forward     string    `yaml:"forward"`
	BatchWait   *Duration `yaml:"batch_wait"`
	PeerLatency *Duration `yaml:"peer_latency"`
	Sync        *Duration `yaml:"sync"`
	SyncTo      string    `yaml:"sync_to"`
	// Behaviors replaces the cluster section's (an empty list: none).
	Behaviors *[]string `yaml:"behaviors"`
	// FailoverLag replaces every failover's lag; ReshardFor every slot move's duration
	// (0s: no slot move in this variant).
	FailoverLag *Duration `yaml:"failover_lag"`
	ReshardFor  *Duration `yaml:"reshard_for"`
	// MaxMemory and EvictionPolicy replace the eviction fault's.
	MaxMemory      string `yaml:"maxmemory"`
	EvictionPolicy string `yaml:"eviction_policy"`
}

// ParseBytes reads a memory size as Redis's configuration does: a whole number of bytes,
// or one followed by k, m, g (powers of 1000) or kb, mb, gb (powers of 1024), in any case.
func ParseBytes(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	unit := int64(1)
	for _, u := range []struct {
		suffix string
		n      int64
	}{{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"k", 1e3}, {"m", 1e6}, {"g", 1e9}, {"b", 1}} {
		if rest, ok := strings.CutSuffix(t, u.suffix); ok {
			t, unit = rest, u.n
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 || n > (1<<50)/unit {
		return 0, fmt.Errorf("want a positive size such as 512kb, 64mb or 1048576, got %q", s)
	}
	return n * unit, nil
}

// validateDesignFields checks the designs' settings of the cluster section or a variant;
// placement, effectiveSync and effectiveTo are the fleet's once the variant is applied.
func (s *Scenario) validateDesignFields(file, field string, forward string, batchWait, peerLatency, sync *Duration, syncTo string, behaviors []string,
	placement string, effectiveSync time.Duration, effectiveTo string) error {
	if forward != "" && !slices.Contains(cluster.Forwards, forward) {
		return s.fail(file, field+".forward", "unknown way %q (want one of %s)", forward, strings.Join(cluster.Forwards, ", "))
	}
	if syncTo != "" && !slices.Contains(cluster.SyncTargets, syncTo) {
		return s.fail(file, field+".sync_to", "unknown target %q (want one of %s)", syncTo, strings.Join(cluster.SyncTargets, ", "))
	}
	for _, d := range []struct {
		name string
		d    *Duration
	}{{"batch_wait", batchWait}, {"peer_latency", peerLatency}, {"sync", sync}} {
		if d.d != nil && *d.d < 0 {
			return s.fail(file, field+"."+d.name, "must not be negative")
		}
	}
	for i, b := range behaviors {
		if !slices.Contains(cluster.Behaviors, b) {
			return s.fail(file, fmt.Sprintf("%s.behaviors[%d]", field, i), "unknown behaviour %q (want %s; GLOBAL is placement global-sync, BATCHING and NO_BATCHING the owner placement's forward)",
				b, strings.Join(cluster.Behaviors, ", "))
		}
	}
	if placement == "global-sync" && effectiveTo == "store" && effectiveSync > 0 && effectiveSync < cluster.KongMinSync {
		return s.fail(file, field+".sync", "%s is below the %s Kong accepts for sync_rate with the store (0s is synchronous, its -1)", effectiveSync, cluster.KongMinSync)
	}
	return nil
}

// validateDesigns checks the cluster section's and the variants' design settings.
func (s *Scenario) validateDesigns(file string) error {
	c := s.Cluster
	d := c.DesignFields
	pl := d.PeerLatency
	baseSync := cluster.DefaultSync
	if d.Sync != nil {
		baseSync = time.Duration(*d.Sync)
	}
	baseTo := or(d.SyncTo, "owner")
	if err := s.validateDesignFields(file, "cluster", d.Forward, d.BatchWait, &pl, d.Sync, d.SyncTo, d.Behaviors, c.Placement, baseSync, baseTo); err != nil {
		return err
	}
	if d.GlobalBatchLimit < 0 || d.GlobalBatchLimit > cluster.DefaultGlobalBatchLimit {
		return s.fail(file, "cluster.global_batch_limit", "must be between 1 and %d (Gubernator's maxBatchSize), got %d", cluster.DefaultGlobalBatchLimit, d.GlobalBatchLimit)
	}
	if d.VNodes < 0 || d.VNodes > 4096 {
		return s.fail(file, "cluster.vnodes", "must be between 0 and 4096, got %d", d.VNodes)
	}
	if d.BatchLimit < 0 {
		return s.fail(file, "cluster.batch_limit", "must not be negative, got %d", d.BatchLimit)
	}
	evicts := HasFault[*EvictionSpec](s)
	// evictable reports whether a fleet of placement (syncing to syncTo) can run under the
	// eviction fault: on the store's scripts, or with no store at all.
	evictable := func(placement, syncTo string) bool {
		cfg := cluster.Config{Placement: placement, SyncTo: syncTo}
		return !evicts || !cfg.UsesStore() || slices.Contains(cluster.EvictionPlacements(), placement)
	}
	if !evictable(c.Placement, d.SyncTo) {
		return s.fail(file, "cluster.placement", "the eviction fault needs a placement on the store's scripts (%s), not %s", strings.Join(cluster.EvictionPlacements(), ", "), c.Placement)
	}
	for i, v := range c.Variants {
		f := fmt.Sprintf("cluster.variants[%d]", i)
		o := v.DesignOverrides
		if !evictable(or(v.Placement, c.Placement), or(o.SyncTo, d.SyncTo)) {
			return s.fail(file, f+".placement", "the eviction fault needs a placement on the store's scripts (%s), not %s", strings.Join(cluster.EvictionPlacements(), ", "), or(v.Placement, c.Placement))
		}
		vSync := baseSync
		if o.Sync != nil {
			vSync = time.Duration(*o.Sync)
		}
		var behaviors []string
		if o.Behaviors != nil {
			behaviors = *o.Behaviors
		}
		if err := s.validateDesignFields(file, f, o.Forward, o.BatchWait, o.PeerLatency, o.Sync, o.SyncTo, behaviors,
			or(v.Placement, c.Placement), vSync, or(o.SyncTo, baseTo)); err != nil {
			return err
		}
		if o.FailoverLag != nil && *o.FailoverLag < 0 {
			return s.fail(file, f+".failover_lag", "must not be negative")
		}
		if o.ReshardFor != nil && *o.ReshardFor < 0 {
			return s.fail(file, f+".reshard_for", "must not be negative")
		}
		if o.MaxMemory != "" {
			if _, err := ParseBytes(o.MaxMemory); err != nil {
				return s.fail(file, f+".maxmemory", "%v", err)
			}
		}
		if o.EvictionPolicy != "" && !slices.Contains(cluster.EvictionPolicies, o.EvictionPolicy) {
			return s.fail(file, f+".eviction_policy", "unknown policy %q (want one of %s)", o.EvictionPolicy, strings.Join(cluster.EvictionPolicies, ", "))
		}
		if (o.MaxMemory != "" || o.EvictionPolicy != "") && !evicts {
			return s.fail(file, f+".maxmemory", "a variant changes the eviction fault, and there is none")
		}
	}
	return nil
}
