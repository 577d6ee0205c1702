package scenario

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

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

// validateDesigns checks the cluster section's and the variants' design settings.
func (s *Scenario) validateDesigns(file string) error {
	c := s.Cluster
	d := c.DesignFields
	if d.VNodes < 0 || d.VNodes > 4096 {
		return s.fail(file, "cluster.vnodes", "must be between 0 and 4096, got %d", d.VNodes)
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
			// The variant's own name for the fault's policy: the fleet's check would point
			// at the fault.
			return s.fail(file, f+".eviction_policy", "unknown policy %q (want one of %s)", o.EvictionPolicy, strings.Join(cluster.EvictionPolicies, ", "))
		}
		if (o.MaxMemory != "" || o.EvictionPolicy != "") && !evicts {
			return s.fail(file, f+".maxmemory", "a variant changes the eviction fault, and there is none")
		}
	}
	return nil
}
