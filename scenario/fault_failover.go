package scenario

import (
	"time"

	"github.com/rlsim/rlsim/cluster"
)

// FailoverSpec fails the store's primary over to a replica Lag behind, at At.
type FailoverSpec struct {
	At  Offset   `yaml:"at"`
	Lag Duration `yaml:"lag"`
}

func init() {
	RegisterFault(FaultKind{Name: "failover", Rank: 50, New: func() Fault { return &FailoverSpec{} }})
}

var _ Fault = (*FailoverSpec)(nil)

func (f *FailoverSpec) Defaults() {}

func (f *FailoverSpec) Validate(c *Check) error {
	if !f.At.Set {
		return c.Fail("at", "is required")
	}
	return nil // the fleet checks the lag and the order (cluster.Config.Validate)
}

func (f *FailoverSpec) Apply(cfg *cluster.Config, epoch time.Time) {
	cfg.Failovers = append(cfg.Failovers, cluster.Failover{At: f.At.Resolve(epoch), Lag: time.Duration(f.Lag)})
}
