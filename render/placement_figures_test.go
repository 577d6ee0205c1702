package render

import (
	"slices"
	"testing"
	"time"

	"github.com/rlsim/rlsim/render/chart"
	"github.com/rlsim/rlsim/report"
)

func designReport(d ...report.Distributed) *report.Report {
	r := &report.Report{Scenario: "designs", Policy: report.Policy{Limit: 100, Window: report.Duration(time.Minute), Burst: 100}}
	for i := range d {
		r.Results = append(r.Results, report.Result{Algorithm: "sliding-window", Requests: 1000, Admitted: 300, Rejected: 700, Distributed: &d[i]})
	}
	return r
}

// A fleet table shows a design's columns by default only where the design is in play:
// hops and latency for owners, free passes for a store that loses counts, evictions or
// OOM refusals by the policy.
func TestFleetTableShowsTheDesignsInPlay(t *testing.T) {
	for _, c := range []struct {
		name       string
		d          report.Distributed
		want, lack []string
	}{
		{"shared", report.Distributed{Placement: "shared", Nodes: 10, NodesMax: 10},
			nil, []string{"peer_hops", "free_passes", "evicted_keys", "oom_errors"}},
		{"owner", report.Distributed{Placement: "owner", Nodes: 5, NodesMax: 8, AddedLatencyMaxMS: 1.5, AddedLatencyP50MS: 1, AddedLatencyP99MS: 1.5,
			Designs: report.Designs{PeerHops: 0.8, PeerMessages: 0.2}},
			[]string{"peer_hops", "peer_messages", "added_latency_ms", "legit_reject_rate", "effective_limit", "nodes"},
			[]string{"free_passes", "evicted_keys"}},
		{"failover", report.Distributed{Placement: "shared", Nodes: 10, NodesMax: 10, Designs: report.Designs{Failovers: 1, FreePasses: 8}},
			[]string{"free_passes", "failover_over_admission"}, []string{"peer_hops", "evicted_keys", "membership_over_admission"}},
		{"lru", report.Distributed{Placement: "shared", Nodes: 10, NodesMax: 10, Designs: report.Designs{EvictionPolicy: "allkeys-lru", EvictedKeys: 7060}},
			[]string{"free_passes", "evicted_keys"}, []string{"oom_errors"}},
		{"noeviction", report.Distributed{Placement: "shared", Nodes: 10, NodesMax: 10, Designs: report.Designs{EvictionPolicy: "noeviction", OOMErrors: 6744}},
			[]string{"free_passes", "evicted_keys"}, []string{"oom_errors"}},
	} {
		tb := DistributedTable(designReport(c.d), report.Columns{})
		if c.name == "noeviction" {
			if i := slices.Index(tb.Names, "evicted_keys"); i < 0 || tb.Rows[0][i] != "OOM 6744" {
				t.Errorf("noeviction: %v %v: the evictions' column does not count the refused writes", tb.Names, tb.Rows[0])
			}
		}
		if w := boxWidth(report.DropEmptyColumns(tb)); w > report.DefaultWidth {
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
	gs := func(nodes int, sync time.Duration, limit int64) report.Distributed {
		return report.Distributed{Placement: "global-sync", Nodes: nodes, NodesMax: nodes, EffectiveLimit: limit,
			Designs: report.Designs{Sync: report.Duration(sync), SyncTo: "store", SyncExchanges: 100}}
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
