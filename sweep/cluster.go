package sweep

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rlsim/rlsim/cluster"
	"github.com/rlsim/rlsim/scenario"
)

// clusterParams are the parameters a sweep sets on a scenario's fleet, the one its
// cluster section describes — a scenario's variants are left out, each grid point being
// the question they ask:
//
//	cluster.sync     a global-sync fleet's exchange interval (Go durations; 0s: synchronous)
//	cluster.sync_to  where it syncs: owner or store
//	cluster.nodes    the node count at the start
//	cluster.failover_lag     every failover's replica lag (Go durations)
//	cluster.maxmemory        the eviction fault's maxmemory (Redis's units: 512kb, 1mb, bytes)
//	cluster.eviction_policy  the eviction fault's policy
var clusterParams = []string{"cluster.sync", "cluster.sync_to", "cluster.nodes", "cluster.failover_lag", "cluster.maxmemory", "cluster.eviction_policy"}

// clusterSetting is what one grid point sets on the fleet.
type clusterSetting struct {
	sync           *scenario.Duration
	syncTo         string
	nodes          *int
	failoverLag    *scenario.Duration
	maxMemory      string
	evictionPolicy string
}

// applyCluster parses value for the cluster parameter name into s.
func applyCluster(s *clusterSetting, name, value string) error {
	switch name {
	case "cluster.sync":
		d, err := time.ParseDuration(value)
		if err != nil || d < 0 {
			return fmt.Errorf("want a duration such as 0s, 10ms or 1s, got %q", value)
		}
		sd := scenario.Duration(d)
		s.sync = &sd
	case "cluster.sync_to":
		if !slices.Contains(cluster.SyncTargets, value) {
			return fmt.Errorf("want one of %s, got %q", strings.Join(cluster.SyncTargets, ", "), value)
		}
		s.syncTo = value
	case "cluster.nodes":
		n, err := strconv.Atoi(value)
		if err != nil || n < 1 || n > cluster.MaxNodes {
			return fmt.Errorf("want a whole number of nodes between 1 and %d, got %q", cluster.MaxNodes, value)
		}
		s.nodes = &n
	case "cluster.failover_lag":
		d, err := time.ParseDuration(value)
		if err != nil || d < 0 {
			return fmt.Errorf("want a duration such as 0s, 500ms or 2s, got %q", value)
		}
		sd := scenario.Duration(d)
		s.failoverLag = &sd
	case "cluster.maxmemory":
		if _, err := scenario.ParseBytes(value); err != nil {
			return fmt.Errorf("want a positive size such as 512kb, 64mb or 1048576, got %q", value)
		}
		s.maxMemory = value
	case "cluster.eviction_policy":
		if !slices.Contains(cluster.EvictionPolicies, value) {
			return fmt.Errorf("want one of %s, got %q", strings.Join(cluster.EvictionPolicies, ", "), value)
		}
		s.evictionPolicy = value
	}
	return nil
}

// set reports whether the point sets anything on the fleet.
func (s clusterSetting) set() bool {
	return s.sync != nil || s.syncTo != "" || s.nodes != nil || s.failoverLag != nil || s.maxMemory != "" || s.evictionPolicy != ""
}

// on returns a copy of sc whose cluster section carries the point's values and has no
// variants; sc is left as it was. A scenario without a cluster section is an error, and
// so is a global-sync setting for a cluster section of another placement: the parameter
// would change nothing, as is a failover lag for a scenario with no failover and an
// eviction setting for one with no eviction fault. The faults the point changes are copies.
func (s clusterSetting) on(sc *scenario.Scenario) (*scenario.Scenario, error) {
	if sc.Cluster == nil {
		return nil, fmt.Errorf("scenario %s has no cluster section for the cluster parameters", sc.Name)
	}
	cp := *sc
	c := *sc.Cluster
	c.Variants = nil
	if (s.sync != nil || s.syncTo != "") && c.Placement != "global-sync" {
		return nil, fmt.Errorf("scenario %s: its cluster section's placement is %s, not global-sync, so cluster.sync and cluster.sync_to change nothing", sc.Name, c.Placement)
	}
	if s.sync != nil {
		c.Sync = s.sync
	}
	c.SyncTo = cmp.Or(s.syncTo, c.SyncTo)
	if s.nodes != nil {
		c.Nodes = s.nodes
	}
	cp.Cluster = &c
	if s.failoverLag == nil && s.maxMemory == "" && s.evictionPolicy == "" {
		return &cp, nil
	}
	cp.Faults = slices.Clone(sc.Faults)
	var failovers, evictions int
	for i, f := range cp.Faults {
		if f, ok := f.Spec.(*scenario.FailoverSpec); ok && s.failoverLag != nil {
			fo := *f
			fo.Lag = *s.failoverLag
			cp.Faults[i].Spec = &fo
			failovers++
		}
		if f, ok := f.Spec.(*scenario.EvictionSpec); ok && (s.maxMemory != "" || s.evictionPolicy != "") {
			e := *f
			e.MaxMemory = cmp.Or(s.maxMemory, e.MaxMemory)
			e.Policy = cmp.Or(s.evictionPolicy, e.Policy)
			cp.Faults[i].Spec = &e
			evictions++
		}
	}
	if s.failoverLag != nil && failovers == 0 {
		return nil, fmt.Errorf("scenario %s has no failover fault, so cluster.failover_lag changes nothing", sc.Name)
	}
	if (s.maxMemory != "" || s.evictionPolicy != "") && evictions == 0 {
		return nil, fmt.Errorf("scenario %s has no eviction fault, so cluster.maxmemory and cluster.eviction_policy change nothing", sc.Name)
	}
	return &cp, nil
}
