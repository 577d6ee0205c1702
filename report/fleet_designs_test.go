package report

import (
	"slices"
	"testing"
	"time"

	"github.com/rlsim/rlsim/report/chart"
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

// A fleet table shows a design's columns by default only where the design is in play:
// hops and latency for owners, free passes for a store that loses counts, evictions or
// OOM refusals by the policy.
func TestFleetTableShowsTheDesignsInPlay(t *testing.T) {
	for _, c := range []struct {
		name       string
		d          Distributed
		want, lack []string
	}{
		{"shared", Distributed{Placement: "shared", Nodes: 10, NodesMax: 10},
			nil, []string{"peer_hops", "free_passes", "evicted_keys", "oom_errors"}},
		{"owner", Distributed{Placement: "owner", Nodes: 5, NodesMax: 8, AddedLatencyMaxMS: 1.5, AddedLatencyP50MS: 1, AddedLatencyP99MS: 1.5,
			Designs: Designs{PeerHops: 0.8, PeerMessages: 0.2}},
			[]string{"peer_hops", "peer_messages", "added_latency_ms", "legit_reject_rate", "effective_limit", "nodes"},
			[]string{"free_passes", "evicted_keys"}},
		{"failover", Distributed{Placement: "shared", Nodes: 10, NodesMax: 10, Designs: Designs{Failovers: 1, FreePasses: 8}},
			[]string{"free_passes", "failover_over_admission"}, []string{"peer_hops", "evicted_keys", "membership_over_admission"}},
		{"lru", Distributed{Placement: "shared", Nodes: 10, NodesMax: 10, Designs: Designs{EvictionPolicy: "allkeys-lru", EvictedKeys: 7060}},
			[]string{"free_passes", "evicted_keys"}, []string{"oom_errors"}},
		{"noeviction", Distributed{Placement: "shared", Nodes: 10, NodesMax: 10, Designs: Designs{EvictionPolicy: "noeviction", OOMErrors: 6744}},
			[]string{"free_passes", "evicted_keys"}, []string{"oom_errors"}},
	} {
		tb := DistributedTable(designReport(c.d), Columns{})
		if c.name == "noeviction" {
			if i := slices.Index(tb.Names, "evicted_keys"); i < 0 || tb.Rows[0][i] != "OOM 6744" {
				t.Errorf("noeviction: %v %v: the evictions' column does not count the refused writes", tb.Names, tb.Rows[0])
			}
		}
		if w := boxWidth(dropEmptyColumns(tb)); w > DefaultWidth {
			t.Errorf("%s: table of %d", c.name, w)
		}
		for _, n := range c.want {
			if !slices.Contains(tb.Names, n) {
				t.Errorf("%s: %v lacks %s", c.name, tb.Names, n)
			}
		}
		for _, n := range c.lack {
			if slices.Contains(tb.Names, n) {
				t.Errorf("%s: %v shows %s", c.name, tb.Names, n)
			}
		}
	}
}

// A design's parameter is drawn only when the report runs it at two values or more, and
// only the lines run at two values or more: the others stay in the table.
func TestDesignFiguresDrawOnlyWhatVaries(t *testing.T) {
	gs := func(nodes int, sync time.Duration, limit int64) Distributed {
		return Distributed{Placement: "global-sync", Nodes: nodes, NodesMax: nodes, EffectiveLimit: limit,
			Designs: Designs{Sync: Duration(sync), SyncTo: "store", SyncExchanges: 100}}
	}
	r := designReport(gs(10, 100*time.Millisecond, 109), gs(10, time.Second, 147), gs(3, time.Second, 133), gs(10, 0, 100))
	figs := DesignFigures(r)
	if len(figs) != 1 || figs[0].Name != "sync" {
		t.Fatalf("figures %v, want the sync chart alone", figs)
	}
	for _, p := range figs[0].Panels {
		lp := p.(chart.LinePanel)
		if len(lp.Series) != 1 || lp.Series[0].Name != "sliding-window, 10 nodes, to the store" || len(lp.Series[0].Points) != 2 {
			t.Fatalf("panel %q: %+v", lp.Title, lp.Series)
		}
	}
	if y := figs[0].Panels[0].(chart.LinePanel).Series[0].Points; y[0].X != 100 || y[0].Y != 109 || y[1].X != 1000 || y[1].Y != 147 {
		t.Errorf("effective limit against sync (ms): %+v", y)
	}
	if figs := DesignFigures(designReport(gs(10, time.Second, 147), gs(3, time.Second, 133))); len(figs) != 0 {
		t.Errorf("one sync value drew %d figures", len(figs))
	}
}
