package render

import (
	"fmt"
	"slices"
	"time"

	"github.com/rlsim/rlsim/report"
)

// DistributedTable is the human table of a fleet run, with the columns c chooses; each
// alert is a note under it.
func DistributedTable(r *report.Report, c report.Columns) report.Table {
	t := chooseTable(fmt.Sprintf("%s — limit %d per %s, burst %d, key %s, seed %d (fleet)",
		r.Scenario, r.Policy.Limit, time.Duration(r.Policy.Window), r.Policy.Burst, r.Key, r.Seed),
		report.FleetTableColumns, r.Results, c, report.FleetPreferred(r))
	for _, x := range r.Results {
		if d := x.Distributed; d != nil && d.Alert != "" {
			t.Notes = append(t.Notes, fmt.Sprintf("%s %s: alert: %s", x.Algorithm, d.Variant, d.Alert))
		}
	}
	shown := report.DropEmptyColumns(t).Names
	if slices.Contains(shown, "peer_hops") || slices.Contains(shown, "peer_messages") {
		t.Notes = append(t.Notes, "peer hops: requests forwarded to their key's owner, per decision; peer msgs: "+
			"messages between nodes per decision (a batch of forwards is one; a global-sync node's exchanges with the owner and its broadcasts)")
	}
	if slices.Contains(shown, "evicted_keys") && report.AnyResult(r.Results, func(x report.Result) bool { return report.FleetOf(x).EvictionPolicy == "noeviction" }) {
		t.Notes = append(t.Notes, "evicted or OOM: the keys the store evicted, or under noeviction (OOM) the requests whose write it refused")
	}
	if slices.Contains(shown, "added_latency_ms") {
		t.Notes = append(t.Notes, "latency ms p50–p99: the latency a decision added, median and 99th percentile")
	}
	return t
}
