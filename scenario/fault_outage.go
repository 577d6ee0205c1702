package scenario

import (
	"time"

	"github.com/rlsim/rlsim/cluster"
)

// OutageSpec makes the store unreachable from At for For; nodes follow Policy meanwhile
// (default fail-closed).
type OutageSpec struct {
	At     Offset   `yaml:"at"`
	For    Duration `yaml:"for"`
	Policy string   `yaml:"policy"`
}

func init() {
	RegisterFault(FaultKind{Name: "outage", Rank: 10, New: func() Fault { return &OutageSpec{} }})
}

var _ Fault = (*OutageSpec)(nil)

func (o *OutageSpec) Defaults() { o.Policy = orDefault(o.Policy, "fail-closed") }

func (o *OutageSpec) Validate(c *Check) error {
	if !o.At.Set {
		return c.Fail("at", "is required")
	}
	return nil // the rest is the fleet's to check (cluster.Config.Validate)
}

func (o *OutageSpec) span(epoch time.Time) (time.Duration, time.Duration) {
	return o.At.Resolve(epoch), time.Duration(o.For)
}

func (o *OutageSpec) order() string { return "outages must be in time order and not overlap" }

func (o *OutageSpec) Apply(cfg *cluster.Config, epoch time.Time) {
	cfg.Outages = append(cfg.Outages, cluster.Outage{At: o.At.Resolve(epoch), For: time.Duration(o.For), Policy: o.Policy})
}
