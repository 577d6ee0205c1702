package report

import (
	"bytes"
	"encoding/csv"
	"slices"
	"testing"
)

func TestCSVFleetColumnsTrailOnlyFleetRuns(t *testing.T) {
	single := &Report{Scenario: "one", Results: []Result{{Algorithm: "gcra", Requests: 3}}}
	fleet := &Report{Scenario: "fleet", Results: []Result{{Algorithm: "incr-expire", Requests: 5, Distributed: &Distributed{
		Variant: "ttl", Placement: "shared-nonatomic", Balancer: "hash", Nodes: 5, NodesMax: 5, Store: "model",
		EffectiveLimit: 11, StoreRoundTrips: 1.5, StoreRoundTripsTotal: 9, Crashes: 2, BlockedForever: 1, LeakedKeys: 3, LeakedBytes: 264,
		AddedLatencyP50MS: 1, AddedLatencyP99MS: 50, StoreLatencyMS: 0.5, StoreTimeouts: 40, BreakerOpenDecisions: 400, BreakerOpens: 6,
		StaleReads: 17, LostWrites: 2,
	}}}}
	read := func(reports ...*Report) [][]string {
		var b bytes.Buffer
		if err := WriteCSV(&b, reports); err != nil {
			t.Fatal(err)
		}
		rows, err := csv.NewReader(&b).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		return rows
	}
	if rows := read(single); !slices.Equal(rows[0], csvColumns) || len(rows[1]) != len(csvColumns) {
		t.Fatalf("a single-limiter run grew columns: %v", rows[0])
	}
	rows := read(single, fleet)
	if !slices.Equal(rows[0], append(slices.Clone(csvColumns), fleetCSVColumns...)) {
		t.Fatalf("header %v", rows[0])
	}
	cell := func(row []string, name string) string { return row[slices.Index(rows[0], name)] }
	if got := rows[1][len(csvColumns):]; slices.ContainsFunc(got, func(s string) bool { return s != "" }) {
		t.Errorf("the single-limiter row has fleet cells: %v", got)
	}
	for name, want := range map[string]string{
		"variant": "ttl", "effective_limit": "11", "store_round_trips": "1.5", "store_round_trips_total": "9",
		"blocked_forever": "1", "leaked_keys": "3", "leaked_bytes": "264", "crashes": "2", "nodes": "5", "requests": "5",
		"added_latency_ms_p50": "1", "added_latency_ms_p99": "50", "store_latency_ms": "0.5", "store_timeouts": "40",
		"breaker_open_decisions": "400", "breaker_opens": "6", "stale_reads": "17", "lost_writes": "2",
	} {
		if got := cell(rows[2], name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
}

// The fleet table shows how often legit clients were refused: behind a lease-based fleet
// it is the figure a reader asks first.
func TestDistributedTableShowsLegitRejectRate(t *testing.T) {
	rate := 0.1234
	r := &Report{Scenario: "fleet", Results: []Result{
		{Algorithm: "lease", Requests: 100, Rejected: 20, LegitRejectRate: &rate, Distributed: &Distributed{Variant: "lease-10", Nodes: 4, NodesMax: 4}},
		{Algorithm: "lease", Requests: 100, Distributed: &Distributed{Variant: "lease-1", Nodes: 4, NodesMax: 4}},
	}}
	tb := DistributedTable(r)
	col := slices.Index(tb.Header, "legit_reject_rate")
	if col < 0 || tb.Rows[0][col] != "12.34%" || tb.Rows[1][col] != "-" {
		t.Fatalf("header %v, rows %v", tb.Header, tb.Rows)
	}
}
