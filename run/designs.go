package run

import (
	"slices"
	"time"

	"github.com/rlsim/rlsim/cluster"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/scenario"
)

// designBase puts the cluster section's design settings into base.
func designBase(s *scenario.Scenario, base *cluster.Config) {
	c := s.Cluster
	d := c.DesignFields
	base.VNodes, base.Forward, base.BatchLimit, base.PeerLatency, base.SyncTo = d.VNodes, d.Forward, d.BatchLimit, time.Duration(d.PeerLatency), d.SyncTo
	base.GlobalBatchLimit, base.Behaviors = d.GlobalBatchLimit, d.Behaviors
	if d.BatchWait != nil {
		base.BatchWait = time.Duration(*d.BatchWait)
	}
	base.Sync = cluster.DefaultSync
	if d.Sync != nil {
		base.Sync = time.Duration(*d.Sync)
	}
}

// designVariant applies a variant's design overrides to cfg (a copy of the base, whose
// slices it replaces rather than changes).
func designVariant(cfg *cluster.Config, v scenario.VariantSpec) {
	o := v.DesignOverrides
	cfg.Forward, cfg.SyncTo = or(o.Forward, cfg.Forward), or(o.SyncTo, cfg.SyncTo)
	if o.BatchWait != nil {
		cfg.BatchWait = time.Duration(*o.BatchWait)
	}
	if o.PeerLatency != nil {
		cfg.PeerLatency = time.Duration(*o.PeerLatency)
	}
	if o.Sync != nil {
		cfg.Sync = time.Duration(*o.Sync)
	}
	if o.Behaviors != nil {
		cfg.Behaviors = *o.Behaviors
	}
	if o.FailoverLag != nil {
		cfg.Failovers = slices.Clone(cfg.Failovers)
		for i := range cfg.Failovers {
			cfg.Failovers[i].Lag = time.Duration(*o.FailoverLag)
		}
	}
	if o.ReshardFor != nil {
		if *o.ReshardFor == 0 {
			cfg.Reshards = nil
		} else {
			cfg.Reshards = slices.Clone(cfg.Reshards)
			for i := range cfg.Reshards {
				cfg.Reshards[i].For = time.Duration(*o.ReshardFor)
			}
		}
	}
	if cfg.Eviction != nil {
		e := *cfg.Eviction
		if o.MaxMemory != "" {
			e.MaxMemory, _ = scenario.ParseBytes(o.MaxMemory)
		}
		e.Policy = or(o.EvictionPolicy, e.Policy)
		if v.OutagePolicy != "" {
			e.OutagePolicy = v.OutagePolicy
		}
		cfg.Eviction = &e
	}
}

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
