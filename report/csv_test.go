package report

import (
	"bytes"
	"encoding/csv"
	"slices"
	"strings"
	"testing"
	"time"
)

func readCSV(t *testing.T, reports ...*Report) [][]string {
	t.Helper()
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

// cellOf is the cell of row under the column name.
func cellOf(t *testing.T, row []string, name string) string {
	t.Helper()
	i := slices.Index(CSVColumns, name)
	if i < 0 {
		t.Fatalf("no column %q", name)
	}
	return row[i]
}

// One header for every run: a single-limiter run, a fleet, an identity run and retrying
// clients all write the same columns, each row saying its kind, the cells that do not
// apply left empty, lists in rows of their own and durations in seconds.
func TestCSVHasOneSchemaForEveryKindOfRun(t *testing.T) {
	share, blocked, peak, broken := 0.25, int64(3), 7.5, 0.1
	single := &Report{Scenario: "one", Seed: 4, Key: "user", Policy: Policy{Limit: 100, Window: Duration(time.Minute), Burst: 100},
		Results: []Result{{Algorithm: "gcra", Requests: 3, Admitted: 2, Rejected: 1, OverAdmission: 1.5}}}
	fleet := &Report{Scenario: "fleet", Policy: Policy{Limit: 10, Window: Duration(1500 * time.Millisecond), Burst: 10},
		Results: []Result{{Algorithm: "incr-expire", Requests: 5, Distributed: &Distributed{
			Variant: "ttl", Placement: "shared-nonatomic", Balancer: "hash", Nodes: 5, NodesMax: 5, Store: "model", Skew: Duration(250 * time.Millisecond),
			EffectiveLimit: 11, StoreRoundTrips: 1.5, StoreRoundTripsTotal: 9, Crashes: 2, BlockedForever: 1, LeakedKeys: 3, LeakedBytes: 264,
			AddedLatencyP50MS: 1, AddedLatencyP99MS: 50, StoreLatencyMS: 0.5, StoreTimeouts: 40, BreakerOpenDecisions: 400, BreakerOpens: 6,
			StaleReads: 17, LostWrites: 2,
		}}}}
	identity := &Report{Scenario: "login", Policy: Policy{Limit: 5, Window: Duration(5 * time.Minute), Burst: 5},
		Results: []Result{{Algorithm: "fixed-window", Requests: 9, AttackerAdmitRate: &share, LegitUsers: 10, LegitUsersBlocked: &blocked,
			LongRunPeak: &peak, PageLoads: 20, BrokenPageLoads: &broken,
			RefusalsByLayer: []LayerCount{{Layer: "account", Key: "account", Checked: 9, Refused: 4, AttackerPassed: 2}},
			Attackers:       []ActorCount{{Actor: "stuffing", Requests: 6, Admitted: 1}}}}}
	storm := &Report{Scenario: "storm", Retries: []RetryResult{{Algorithm: "gcra", Strategy: "exponential", Clients: 1000, Runs: 2,
		CallsMean: 5880.5, Requests: 1000, WaveHeights: []int64{511, 471}, WaveThreshold: 50, Bin: Duration(10 * time.Millisecond)}}}

	for _, r := range []*Report{single, fleet, identity, storm} {
		if rows := readCSV(t, r); !slices.Equal(rows[0], CSVColumns) {
			t.Fatalf("%s: header %v", r.Scenario, rows[0])
		}
	}
	rows := readCSV(t, single, fleet, identity, storm)
	var kinds []string
	for _, row := range rows[1:] {
		if len(row) != len(CSVColumns) {
			t.Fatalf("row of %d cells: %v", len(row), row)
		}
		kinds = append(kinds, cellOf(t, row, "scenario")+"/"+cellOf(t, row, "kind"))
	}
	want := []string{"one/result", "fleet/result", "login/result", "login/layer", "login/campaign", "storm/retry", "storm/wave", "storm/wave"}
	if !slices.Equal(kinds, want) {
		t.Fatalf("rows %v, want %v", kinds, want)
	}
	one, fl, login, layer, campaign, retry, wave := rows[1], rows[2], rows[3], rows[4], rows[5], rows[6], rows[7]
	for _, c := range []struct {
		row        []string
		name, want string
	}{
		{one, "window_s", "60"}, {one, "limit", "100"}, {one, "seed", "4"}, {one, "over_admission", "1.5"},
		{one, "variant", ""}, {one, "effective_limit", ""}, {one, "legit_reject_rate", ""}, {one, "broken_page_loads", ""}, {one, "clients", ""},
		{fl, "window_s", "1.5"}, {fl, "skew_s", "0.25"}, {fl, "variant", "ttl"}, {fl, "effective_limit", "11"}, {fl, "store_round_trips", "1.5"},
		{fl, "blocked_forever", "1"}, {fl, "leaked_bytes", "264"}, {fl, "added_latency_ms_p99", "50"}, {fl, "breaker_opens", "6"}, {fl, "lost_writes", "2"},
		{login, "attacker_admit_rate", "0.25"}, {login, "broken_page_loads", "0.1"}, {login, "page_loads", "20"},
		{login, "legit_users_blocked", "3"}, {login, "legit_users", "10"}, {login, "long_run_peak", "7.5"},
		{layer, "layer", "account"}, {layer, "layer_key", "account"}, {layer, "refused", "4"}, {layer, "attacker_passed", "2"}, {layer, "algorithm", "fixed-window"},
		{campaign, "actor", "stuffing"}, {campaign, "requests", "6"}, {campaign, "admitted", "1"},
		{retry, "strategy", "exponential"}, {retry, "calls_mean", "5880.5"}, {retry, "waves", "2"}, {retry, "bin_s", "0.01"}, {retry, "limit", ""},
		{wave, "wave", "1"}, {wave, "wave_height", "511"}, {rows[8], "wave", "2"}, {rows[8], "wave_height", "471"},
	} {
		if got := cellOf(t, c.row, c.name); got != c.want {
			t.Errorf("%s %s: %s = %q, want %q", cellOf(t, c.row, "scenario"), cellOf(t, c.row, "kind"), c.name, got, c.want)
		}
	}
	// No cell packs a list.
	for _, row := range rows {
		for i, cell := range row {
			if strings.ContainsAny(cell, " ;|") && CSVColumns[i] != "key" {
				t.Errorf("%s = %q looks like a list", CSVColumns[i], cell)
			}
		}
	}
}

// The columns the human tables show are all in the CSV under the same machine names.
func TestCSVCarriesEveryTableColumn(t *testing.T) {
	// client_share is client_share_min and _max; wave_heights are the rows of kind wave.
	composite := map[string]bool{"client_share": true, "wave_heights": true}
	for _, name := range ColumnNames() {
		if !slices.Contains(CSVColumns, name) && !composite[name] {
			t.Errorf("the tables show %s, the CSV has no such column", name)
		}
	}
}
