package cluster

import (
	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/report"
)

// metered has f's decisions measured as a run measures them, and returns what finishes
// the fleet and gives its figures: the meter's, and the fleet's own facts.
func metered(f *Fleet, p algorithms.Policy) func(variant string) (*report.Distributed, error) {
	m := report.NewFleetMeter(p.Limit, p.Window)
	var membership, failovers []int64 // the windows after them, as a run has them watched
	for _, s := range f.cfg.Scale {
		membership = append(membership, f.cfg.Epoch+int64(s.At))
	}
	for _, fo := range f.cfg.Failovers {
		failovers = append(failovers, f.cfg.Epoch+int64(fo.At))
	}
	for _, r := range f.cfg.Reshards {
		failovers = append(failovers, f.cfg.Epoch+int64(r.At))
	}
	m.After(membership, failovers)
	f.Observe(func(o *Observation) { m.Observe((*report.FleetDecision)(o)) })
	return func(variant string) (*report.Distributed, error) {
		s, err := f.Finish()
		d := &report.Distributed{
			Variant: variant, Placement: f.cfg.Placement, Balancer: f.cfg.Balancer, Nodes: f.cfg.Nodes,
			NodesMax: s.NodesMax, Store: s.Store, GuardLimit: s.GuardLimit, Alerts: s.Alerts, Alert: s.Alert,
			BlockedForever: s.BlockedForever, LeakedKeys: s.LeakedKeys, LeakedBytes: s.LeakedBytes,
			BreakerOpens: s.BreakerOpens, StaleReads: s.StaleReads, LostWrites: s.LostWrites,
		}
		m.Fill(d)
		return d, err
	}
}
