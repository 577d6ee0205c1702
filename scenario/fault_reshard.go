package scenario

import (
	"time"

	"github.com/rlsim/rlsim/cluster"
)

// ReshardSpec moves Fraction of a Redis Cluster's hash slots from At for For.
type ReshardSpec struct {
	At       Offset   `yaml:"at"`
	For      Duration `yaml:"for"`
	Fraction float64  `yaml:"fraction"`
}

func init() {
	RegisterFault(FaultKind{Name: "reshard", Rank: 60, New: func() Fault { return &ReshardSpec{} }})
}

var _ Fault = (*ReshardSpec)(nil)

func (r *ReshardSpec) Defaults() {}

func (r *ReshardSpec) Validate(c *Check) error {
	if !r.At.Set {
		return c.Fail("at", "is required")
	}
	return nil // the fleet checks the span, the fraction and the order (cluster.Config.Validate)
}

func (r *ReshardSpec) Apply(cfg *cluster.Config, epoch time.Time) {
	cfg.Reshards = append(cfg.Reshards, cluster.Reshard{At: r.At.Resolve(epoch), For: time.Duration(r.For), Fraction: r.Fraction})
}
