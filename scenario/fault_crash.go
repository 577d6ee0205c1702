package scenario

import (
	"time"

	"github.com/rlsim/rlsim/cluster"
)

// CrashSpec is the chance a process dies between INCR and EXPIRE.
type CrashSpec struct {
	Probability float64 `yaml:"probability"`
}

func init() {
	RegisterFault(FaultKind{Name: "crash_between_incr_expire", Rank: 40, New: func() Fault { return &CrashSpec{} }})
}

func (s *CrashSpec) Defaults() {}

func (s *CrashSpec) Validate(c *Check) error {
	if p := s.Probability; p < 0 || p > 1 {
		return c.Fail("probability", "must be between 0 and 1, got %g", p)
	}
	return nil
}

func (s *CrashSpec) Apply(cfg *cluster.Config, _ time.Time) { cfg.CrashProbability = s.Probability }
