package scenario

import (
	"slices"
	"strings"
	"time"

	"github.com/rlsim/rlsim/cluster"
)

// PartitionSpec cuts nodes 0..Nodes-1 off from the store and their peers from At for
// For; they decide by Policy meanwhile (default fail-closed).
type PartitionSpec struct {
	At     Offset   `yaml:"at"`
	For    Duration `yaml:"for"`
	Nodes  int      `yaml:"nodes"`
	Policy string   `yaml:"policy"`
	// Cut is what the nodes lose: "both" (the default), "store" or "peers".
	Cut string `yaml:"cut"`
}

func init() {
	RegisterFault(FaultKind{Name: "partition", Rank: 80, New: func() Fault { return &PartitionSpec{} }})
}

var _ Fault = (*PartitionSpec)(nil)

// cutBoth is the partition cut that takes both the store and the peers: the fleet's "".
var cutBoth = cluster.PartitionCuts[0]

func (p *PartitionSpec) Defaults() {
	p.Policy = orDefault(p.Policy, "fail-closed")
	p.Cut = orDefault(p.Cut, cutBoth)
}

func (p *PartitionSpec) Validate(c *Check) error {
	if !p.At.Set {
		return c.Fail("at", "is required")
	}
	if p.Nodes < 1 || p.Nodes > cluster.MaxNodes {
		return c.Fail("nodes", "must be between 1 and %d, got %d", cluster.MaxNodes, p.Nodes)
	}
	// The fleet checks the span and the policy (cluster.Config.Validate); a partition of
	// no nodes would be a store outage to it, and "both" is the file's word.
	if !slices.Contains(cluster.PartitionCuts, p.Cut) {
		return c.Fail("cut", "unknown cut %q (want one of %s)", p.Cut, strings.Join(cluster.PartitionCuts, ", "))
	}
	return nil
}

func (p *PartitionSpec) span(epoch time.Time) (time.Duration, time.Duration) {
	return p.At.Resolve(epoch), time.Duration(p.For)
}

func (p *PartitionSpec) order() string {
	return "partitions and outages must be in time order and not overlap"
}

func (p *PartitionSpec) Apply(cfg *cluster.Config, epoch time.Time) {
	cut := p.Cut
	if cut == cutBoth {
		cut = ""
	}
	cfg.Outages = append(cfg.Outages, cluster.Outage{At: p.At.Resolve(epoch), For: time.Duration(p.For), Policy: p.Policy, Nodes: p.Nodes, Cut: cut})
}
