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
var clusterParams = []string{"cluster.sync", "cluster.sync_to", "cluster.nodes"}

// clusterSetting is what one grid point sets on the fleet.
type clusterSetting struct {
	sync   *scenario.Duration
	syncTo string
	nodes  *int
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
	}
	return nil
}

// set reports whether the point sets anything on the fleet.
func (s clusterSetting) set() bool { return s.sync != nil || s.syncTo != "" || s.nodes != nil }

// on returns a copy of sc whose cluster section carries the point's values and has no
// variants; sc is left as it was. A scenario without a cluster section is an error, and
// so is a global-sync setting for a cluster section of another placement: the parameter
// would change nothing.
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
	return &cp, nil
}
