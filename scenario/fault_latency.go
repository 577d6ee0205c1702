package scenario

import (
	"time"

	"github.com/rlsim/rlsim/cluster"
)

// LatencySpec is the store's round-trip time, added to a decision per round trip.
type LatencySpec struct {
	RoundTrip Duration `yaml:"round_trip"`
}

func init() {
	RegisterFault(FaultKind{Name: "latency", Rank: 20, New: func() Fault { return &LatencySpec{} }})
}

var _ Fault = (*LatencySpec)(nil)

func (l *LatencySpec) Defaults() {}

func (l *LatencySpec) Validate(*Check) error { return nil } // the fleet checks it (cluster.Config.Validate)

func (l *LatencySpec) Apply(cfg *cluster.Config, _ time.Time) {
	cfg.Latency = time.Duration(l.RoundTrip)
}
