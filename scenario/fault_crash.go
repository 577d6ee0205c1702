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

var _ Fault = (*CrashSpec)(nil)

func (s *CrashSpec) Defaults() {}

func (s *CrashSpec) Validate(*Check) error { return nil } // the fleet checks it (cluster.Config.Validate)

func (s *CrashSpec) Apply(cfg *cluster.Config, _ time.Time) { cfg.CrashProbability = s.Probability }
