package report

import (
	"strconv"
	"time"
)

// fleetCSVColumns are the results CSV's trailing columns when a report has fleet results:
// the Distributed figures under their JSON names.
var fleetCSVColumns = []string{
	"variant", "placement", "balancer", "nodes", "nodes_max", "store", "clock", "skew",
	"effective_limit", "client_share_min", "client_share_max", "store_round_trips", "store_round_trips_total",
	"node_peak_window_admitted", "guard_limit", "leases_outstanding_max",
	"outage_admitted", "outage_refused", "outage_over_admission", "outage_node_peak", "alerts",
	"crashes", "blocked_forever", "leaked_keys", "leaked_bytes", "added_latency_ms_mean", "added_latency_ms_max",
	"added_latency_ms_p50", "added_latency_ms_p99", "store_latency_ms", "store_timeouts",
	"breaker_open_decisions", "breaker_opens", "stale_reads", "lost_writes",
	"peer_hops", "peer_messages", "forward", "sync", "sync_to", "sync_exchanges", "ownership_moves",
	"membership_over_admission", "failovers", "reshards", "failover_lag", "failover_over_admission",
	"free_passes", "free_pass_keys", "maxmemory", "eviction_policy", "evicted_keys", "oom_errors",
	"store_keys_max", "store_bytes_max", "partitioned_nodes",
}

// anyFleet reports whether any of the reports ran on a fleet.
func anyFleet(reports []*Report) bool {
	for _, r := range reports {
		if hasDistributed(r) {
			return true
		}
	}
	return false
}

// fleetCSVCells are one result's cells under fleetCSVColumns; empty for a result that
// did not run on a fleet (a single-limiter scenario beside cluster ones in one file).
func fleetCSVCells(d *Distributed) []string {
	if d == nil {
		return make([]string, len(fleetCSVColumns))
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	return append([]string{
		d.Variant, d.Placement, d.Balancer, i(int64(d.Nodes)), i(int64(d.NodesMax)), d.Store, d.Clock, f(time.Duration(d.Skew).Seconds()),
		i(d.EffectiveLimit), f(d.ClientShareMin), f(d.ClientShareMax), f(d.StoreRoundTrips), i(d.StoreRoundTripsTotal),
		i(d.NodePeakWindowAdmitted), i(d.GuardLimit), i(d.LeasesOutstandingMax),
		i(d.OutageAdmitted), i(d.OutageRefused), f(d.OutageOverAdmission), i(d.OutageNodePeak), i(int64(d.Alerts)),
		i(d.Crashes), i(d.BlockedForever), i(d.LeakedKeys), i(d.LeakedBytes), f(d.AddedLatencyMeanMS), f(d.AddedLatencyMaxMS),
		f(d.AddedLatencyP50MS), f(d.AddedLatencyP99MS), f(d.StoreLatencyMS), i(d.StoreTimeouts),
		i(d.BreakerOpenDecisions), i(d.BreakerOpens), i(d.StaleReads), i(d.LostWrites),
	}, designCSVCells(d)...)
}
