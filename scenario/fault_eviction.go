package scenario

import (
	"time"

	"github.com/rlsim/rlsim/cluster"
)

// EvictionSpec gives the store a maxmemory ("512kb", "1mb", or bytes) and an eviction
// policy (default allkeys-lru); under noeviction nodes decide a refused write by
// OutagePolicy (default fail-closed).
type EvictionSpec struct {
	MaxMemory    string `yaml:"maxmemory"`
	Policy       string `yaml:"policy"`
	OutagePolicy string `yaml:"outage_policy"`
}

func init() {
	RegisterFault(FaultKind{Name: "eviction", Rank: 70, New: func() Fault { return &EvictionSpec{} }})
}

var _ Fault = (*EvictionSpec)(nil)

func (e *EvictionSpec) Defaults() {
	e.Policy = orDefault(e.Policy, "allkeys-lru")
	e.OutagePolicy = orDefault(e.OutagePolicy, "fail-closed")
}

func (e *EvictionSpec) Validate(c *Check) error {
	if HasFault[*FailoverSpec](c.sc) || HasFault[*ReshardSpec](c.sc) {
		return c.Fail("", "a store under memory pressure cannot also fail over or move slots in one scenario; use two")
	}
	if _, err := ParseBytes(e.MaxMemory); err != nil {
		return c.Fail("maxmemory", "%v", err)
	}
	return nil // the fleet checks the policies (cluster.Config.Validate)
}

func (e *EvictionSpec) Apply(cfg *cluster.Config, _ time.Time) {
	b, _ := ParseBytes(e.MaxMemory)
	cfg.Eviction = &cluster.Eviction{MaxMemory: b, Policy: e.Policy, OutagePolicy: e.OutagePolicy}
}
