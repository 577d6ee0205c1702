package scenario

import (
	"time"

	"github.com/rlsim/rlsim/cluster"
)

// SkewSpec spreads node clocks over [−Max, +Max].
type SkewSpec struct {
	Max Duration `yaml:"max"`
}

func init() {
	RegisterFault(FaultKind{Name: "skew", Rank: 30, New: func() Fault { return &SkewSpec{} }})
}

var _ Fault = (*SkewSpec)(nil)

func (s *SkewSpec) Defaults() {}

func (s *SkewSpec) Validate(*Check) error { return nil } // the fleet checks it (cluster.Config.Validate)

func (s *SkewSpec) Apply(cfg *cluster.Config, _ time.Time) { cfg.Skew = time.Duration(s.Max) }
