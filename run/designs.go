package run

import (
	"github.com/rlsim/rlsim/cluster"
	"github.com/rlsim/rlsim/report"
)

// eventTimes are the moments (ns since the Unix epoch) of a fleet's membership changes,
// and of its store's failovers and slot moves, for its meter to watch the window after.
func eventTimes(cfg cluster.Config) (membership, failovers []int64) {
	nodes := cfg.Nodes
	for _, st := range cfg.Scale {
		if st.Nodes != nodes {
			membership = append(membership, cfg.Epoch+int64(st.At))
			nodes = st.Nodes
		}
	}
	if cfg.UsesStore() {
		for _, f := range cfg.Failovers {
			failovers = append(failovers, cfg.Epoch+int64(f.At))
		}
		for _, r := range cfg.Reshards {
			failovers = append(failovers, cfg.Epoch+int64(r.At))
		}
	}
	return membership, failovers
}

// addDesigns puts a fleet's design figures into d, whose meter's figures are in: what
// the designs cost the store beyond the decisions' own round trips (a global-sync node's
// exchanges with it) joins the round trips, and the writes a failover lost the lost ones.
func addDesigns(d *report.Distributed, cfg cluster.Config, f cluster.DesignFigures, decisions int64) {
	membership, failovers := d.MembershipOverAdmission, d.FailoverOverAdmission
	d.Designs = designFigures(cfg, f)
	d.MembershipOverAdmission, d.FailoverOverAdmission = membership, failovers
	d.LostWrites += f.LostWrites
	if f.SyncsOnStore {
		d.StoreRoundTripsTotal += f.Syncs
		if decisions > 0 {
			d.StoreRoundTrips = float64(d.StoreRoundTripsTotal) / float64(decisions)
		}
	}
}

// designFigures are a fleet's design figures as a result reports them.
func designFigures(cfg cluster.Config, f cluster.DesignFigures) report.Designs {
	d := report.Designs{
		PeerHops: f.PeerHops, PeerMessages: f.PeerMessages, OwnershipMoves: f.OwnershipMoves,
		Failovers: len(cfg.Failovers), Reshards: len(cfg.Reshards),
		FreePasses: f.FreePasses, FreePassKeys: f.FreePassKeys,
		EvictedKeys: f.EvictedKeys, OOMErrors: f.OOMErrors, StoreKeysMax: int64(f.StoreKeysMax), StoreBytesMax: f.StoreBytesMax,
		Forward: f.Forward, Sync: report.Duration(f.Sync), SyncTo: f.SyncTo,
	}
	if f.SyncTo != "" {
		d.SyncExchanges = f.Syncs
	}
	if !cfg.UsesStore() {
		d.Failovers, d.Reshards = 0, 0 // no store to fail over
	} else {
		for _, fo := range cfg.Failovers {
			d.FailoverLag = max(d.FailoverLag, report.Duration(fo.Lag))
		}
		if e := cfg.Eviction; e != nil {
			d.MaxMemory, d.EvictionPolicy = e.MaxMemory, e.Policy
		}
	}
	for _, o := range cfg.Outages {
		d.PartitionedNodes = max(d.PartitionedNodes, o.Nodes)
	}
	return d
}
