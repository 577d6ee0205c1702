package report

import (
	"testing"
	"time"
)

func designReport(d ...Distributed) *Report {
	r := &Report{Scenario: "designs", Policy: Policy{Limit: 100, Window: Duration(time.Minute), Burst: 100}}
	for i := range d {
		r.Results = append(r.Results, Result{Algorithm: "sliding-window", Requests: 1000, Admitted: 300, Rejected: 700, Distributed: &d[i]})
	}
	return r
}

// The designs' figures go under their own CSV columns on a fleet row, durations in seconds.
func TestDesignFiguresInTheCSV(t *testing.T) {
	r := designReport(Distributed{Variant: "owner-100ms", Placement: "global-sync", Nodes: 10, NodesMax: 10, EffectiveLimit: 104,
		Designs: Designs{PeerHops: 0.5, PeerMessages: 2.7, Forward: "batched", Sync: Duration(100 * time.Millisecond), SyncTo: "owner",
			SyncExchanges: 2700, OwnershipMoves: 31, MembershipOverAdmission: 1.51, Failovers: 1, Reshards: 2,
			FailoverLag: Duration(2 * time.Second), FailoverOverAdmission: 1.27, FreePasses: 198, FreePassKeys: 10,
			MaxMemory: 229376, EvictionPolicy: "allkeys-lru", EvictedKeys: 7060, OOMErrors: 3, StoreKeysMax: 1500,
			StoreBytesMax: 229000, PartitionedNodes: 3}})
	row := readCSV(t, r)[1]
	for name, want := range map[string]string{
		"peer_hops": "0.5", "peer_messages": "2.7", "forward": "batched", "sync_s": "0.1", "sync_to": "owner",
		"sync_exchanges": "2700", "ownership_moves": "31", "membership_over_admission": "1.51", "failovers": "1", "reshards": "2",
		"failover_lag_s": "2", "failover_over_admission": "1.27", "free_passes": "198", "free_pass_keys": "10",
		"maxmemory": "229376", "eviction_policy": "allkeys-lru", "evicted_keys": "7060", "oom_errors": "3",
		"store_keys_max": "1500", "store_bytes_max": "229000", "partitioned_nodes": "3", "effective_limit": "104",
	} {
		if got := cellOf(t, row, name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	single := &Report{Scenario: "one", Results: []Result{{Algorithm: "gcra"}}}
	if got := cellOf(t, readCSV(t, single)[1], "free_passes"); got != "" {
		t.Errorf("a single limiter's free_passes = %q, want empty", got)
	}
}
