package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"time"
)

// CSVColumns are the columns of every results CSV (`--format csv`, results.csv), the
// same for every run whatever its scenarios: one row per thing measured, its `kind` saying
// what it is, and an empty cell wherever a column does not apply to the row. Numbers are
// plain numbers, durations are in seconds (the `_s` columns), shares are fractions (0.5),
// and what JSON holds as a list has rows of its own. docs/reports.md describes each kind.
var CSVColumns = []string{
	// Every row: what it is and the run it belongs to.
	"kind", "scenario", "seed", "limit", "window_s", "burst", "key",
	// What the row is about: an algorithm (and fleet variant), a retry strategy, a layer
	// of a layered limit, an attacker campaign, a retry wave.
	"algorithm", "variant", "strategy", "layer", "actor", "wave",
	// kind=result: one algorithm's results (requests and admitted also for campaigns,
	// requests also for retries: the mean a run).
	"requests", "admitted", "rejected", "peak_window_admitted", "over_admission", "worst_over_admission",
	"false_allow", "false_reject", "false_allow_rate", "false_reject_rate", "legit_reject_rate", "attacker_admit_rate",
	"backend_peak", "state_bytes_per_key", "keys", "delay_ms_mean", "delay_ms_max",
	"unkeyed", "page_loads", "broken_page_loads", "legit_users", "legit_users_blocked", "long_run_peak",
	"unread_lines", "memory_keys", "memory_bytes_per_key", "memory_bytes",
	// kind=result on a fleet: the fleet figures (docs/distributed.md).
	"placement", "balancer", "nodes", "nodes_max", "store", "clock", "skew_s",
	"effective_limit", "client_share_min", "client_share_max", "store_round_trips", "store_round_trips_total",
	"node_peak_window_admitted", "guard_limit", "leases_outstanding_max",
	"outage_admitted", "outage_refused", "outage_over_admission", "outage_node_peak", "alerts",
	"crashes", "blocked_forever", "leaked_keys", "leaked_bytes", "added_latency_ms_mean", "added_latency_ms_max",
	"added_latency_ms_p50", "added_latency_ms_p99", "store_latency_ms", "store_timeouts",
	"breaker_open_decisions", "breaker_opens", "stale_reads", "lost_writes",
	// kind=result on a fleet running one of the designs beyond the notes (owners, global
	// sync, failovers and slot moves, eviction, partitions).
	"peer_hops", "peer_messages", "forward", "sync_s", "sync_to", "sync_exchanges", "ownership_moves",
	"membership_over_admission", "failovers", "reshards", "failover_lag_s", "failover_over_admission",
	"free_passes", "free_pass_keys", "maxmemory", "eviction_policy", "evicted_keys", "oom_errors",
	"store_keys_max", "store_bytes_max", "partitioned_nodes",
	// kind=layer: what one layer of a layered limit did under one algorithm.
	"layer_key", "checked", "refused", "attacker_passed",
	// kind=retry: one algorithm and retry strategy of a scenario's retrying clients.
	"clients", "runs", "calls_mean", "completion_ms_mean", "completion_ms_p50", "completion_ms_p99", "completion_ms_max",
	"peak_arrivals", "waves", "wave_threshold", "bin_s", "give_ups", "duplicates", "load_peak", "amplification",
	"wasted", "withheld", "failed", "retried_wrongly", "capacity", "retry_after_refused_share",
	// kind=wave: one synchronized retry wave of a strategy's first run, in time order.
	"wave_height",
}

// The kinds of row of the results CSV.
const (
	CSVResult   = "result"
	CSVLayer    = "layer"
	CSVCampaign = "campaign"
	CSVRetry    = "retry"
	CSVWave     = "wave"
)

var csvIndex = func() map[string]int {
	m := make(map[string]int, len(CSVColumns))
	for i, c := range CSVColumns {
		m[c] = i
	}
	return m
}()

// csvRow is one row under CSVColumns, filled by name.
type csvRow struct {
	cells []string
	err   error
}

func newCSVRow(kind string, r *Report) *csvRow {
	row := &csvRow{cells: make([]string, len(CSVColumns))}
	row.set("kind", kind)
	row.set("scenario", r.Scenario)
	row.set("seed", strconv.FormatUint(r.Seed, 10))
	if r.Policy.Limit > 0 || r.Policy.Window > 0 {
		row.int("limit", r.Policy.Limit)
		row.float("window_s", time.Duration(r.Policy.Window).Seconds())
		row.int("burst", r.Policy.Burst)
	}
	row.set("key", r.Key)
	return row
}

func (row *csvRow) set(name, v string) {
	i, ok := csvIndex[name]
	if !ok {
		if row.err == nil {
			row.err = fmt.Errorf("results CSV: no column %q", name)
		}
		return
	}
	row.cells[i] = v
}

func (row *csvRow) int(name string, v int64) { row.set(name, strconv.FormatInt(v, 10)) }

func (row *csvRow) float(name string, v float64) { row.set(name, strconv.FormatFloat(v, 'g', -1, 64)) }

// optional sets a figure that may not apply, leaving the cell empty when it does not.
func (row *csvRow) optional(name string, v *float64) {
	if v != nil {
		row.float(name, *v)
	}
}

// WriteCSV writes every report as rows under CSVColumns, with the header first: per
// report, its results (each followed by its layers and attacker campaigns), then its
// retry results (each followed by its waves).
func WriteCSV(w io.Writer, reports []*Report) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVColumns); err != nil {
		return err
	}
	for _, r := range reports {
		for _, row := range csvRows(r) {
			if row.err != nil {
				return row.err
			}
			if err := cw.Write(row.cells); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

func csvRows(r *Report) []*csvRow {
	var rows []*csvRow
	for _, x := range r.Results {
		row := newCSVRow(CSVResult, r)
		resultCells(row, r, x)
		rows = append(rows, row)
		for _, l := range x.RefusalsByLayer {
			row := newCSVRow(CSVLayer, r)
			nameResult(row, x)
			row.set("layer", l.Layer)
			row.set("layer_key", l.Key)
			row.int("checked", l.Checked)
			row.int("refused", l.Refused)
			row.int("attacker_passed", l.AttackerPassed)
			rows = append(rows, row)
		}
		for _, a := range x.Attackers {
			row := newCSVRow(CSVCampaign, r)
			nameResult(row, x)
			row.set("actor", a.Actor)
			row.int("requests", a.Requests)
			row.int("admitted", a.Admitted)
			rows = append(rows, row)
		}
	}
	for _, x := range r.Retries {
		row := newCSVRow(CSVRetry, r)
		retryCells(row, x)
		rows = append(rows, row)
		for i, h := range x.WaveHeights {
			row := newCSVRow(CSVWave, r)
			row.set("algorithm", x.Algorithm)
			row.set("strategy", x.Strategy)
			row.int("wave", int64(i+1))
			row.int("wave_height", h)
			rows = append(rows, row)
		}
	}
	return rows
}

// nameResult fills the columns that say which result a layer or campaign row belongs to.
func nameResult(row *csvRow, x Result) {
	row.set("algorithm", x.Algorithm)
	if x.Distributed != nil {
		row.set("variant", x.Distributed.Variant)
	}
}

func resultCells(row *csvRow, r *Report, x Result) {
	nameResult(row, x)
	row.int("requests", x.Requests)
	row.int("admitted", x.Admitted)
	row.int("rejected", x.Rejected)
	row.int("peak_window_admitted", x.PeakWindowAdmitted)
	row.float("over_admission", x.OverAdmission)
	row.optional("worst_over_admission", x.WorstOverAdmission)
	row.int("false_allow", x.FalseAllow)
	row.int("false_reject", x.FalseReject)
	row.float("false_allow_rate", x.FalseAllowRate)
	row.float("false_reject_rate", x.FalseRejectRate)
	row.optional("legit_reject_rate", x.LegitRejectRate)
	row.optional("attacker_admit_rate", x.AttackerAdmitRate)
	row.int("backend_peak", x.BackendPeak)
	if !x.StateBytesUnknown {
		row.float("state_bytes_per_key", x.StateBytesPerKey)
	}
	row.int("keys", int64(x.Keys))
	row.float("delay_ms_mean", x.DelayMeanMS)
	row.float("delay_ms_max", x.DelayMaxMS)
	row.int("unkeyed", x.Unkeyed)
	if x.BrokenPageLoads != nil {
		row.int("page_loads", x.PageLoads)
		row.optional("broken_page_loads", x.BrokenPageLoads)
	}
	if x.LegitUsersBlocked != nil {
		row.int("legit_users", x.LegitUsers)
		row.int("legit_users_blocked", *x.LegitUsersBlocked)
	}
	row.optional("long_run_peak", x.LongRunPeak)
	if r.UnreadLines > 0 {
		row.int("unread_lines", int64(r.UnreadLines))
	}
	if m := r.Memory; m != nil {
		row.int("memory_keys", int64(m.Keys))
		row.float("memory_bytes_per_key", m.BytesPerKey.Total)
		row.int("memory_bytes", m.Bytes)
	}
	if d := x.Distributed; d != nil {
		fleetCells(row, d)
	}
}

func fleetCells(row *csvRow, d *Distributed) {
	row.set("placement", d.Placement)
	row.set("balancer", d.Balancer)
	row.int("nodes", int64(d.Nodes))
	row.int("nodes_max", int64(d.NodesMax))
	row.set("store", d.Store)
	row.set("clock", d.Clock)
	row.float("skew_s", time.Duration(d.Skew).Seconds())
	row.int("effective_limit", d.EffectiveLimit)
	row.float("client_share_min", d.ClientShareMin)
	row.float("client_share_max", d.ClientShareMax)
	row.float("store_round_trips", d.StoreRoundTrips)
	row.int("store_round_trips_total", d.StoreRoundTripsTotal)
	row.int("node_peak_window_admitted", d.NodePeakWindowAdmitted)
	row.int("guard_limit", d.GuardLimit)
	row.int("leases_outstanding_max", d.LeasesOutstandingMax)
	row.int("outage_admitted", d.OutageAdmitted)
	row.int("outage_refused", d.OutageRefused)
	row.float("outage_over_admission", d.OutageOverAdmission)
	row.int("outage_node_peak", d.OutageNodePeak)
	row.int("alerts", int64(d.Alerts))
	row.int("crashes", d.Crashes)
	row.int("blocked_forever", d.BlockedForever)
	row.int("leaked_keys", d.LeakedKeys)
	row.int("leaked_bytes", d.LeakedBytes)
	row.float("added_latency_ms_mean", d.AddedLatencyMeanMS)
	row.float("added_latency_ms_max", d.AddedLatencyMaxMS)
	row.float("added_latency_ms_p50", d.AddedLatencyP50MS)
	row.float("added_latency_ms_p99", d.AddedLatencyP99MS)
	row.float("store_latency_ms", d.StoreLatencyMS)
	row.int("store_timeouts", d.StoreTimeouts)
	row.int("breaker_open_decisions", d.BreakerOpenDecisions)
	row.int("breaker_opens", d.BreakerOpens)
	row.int("stale_reads", d.StaleReads)
	row.int("lost_writes", d.LostWrites)
	designCSVCells(row, &d.Designs)
}

func retryCells(row *csvRow, x RetryResult) {
	row.set("algorithm", x.Algorithm)
	row.set("strategy", x.Strategy)
	row.int("clients", int64(x.Clients))
	row.int("runs", int64(x.Runs))
	row.float("requests", x.Requests)
	row.float("calls_mean", x.CallsMean)
	row.float("completion_ms_mean", x.CompletionMSMean)
	row.float("completion_ms_p50", x.CompletionMSP50)
	row.float("completion_ms_p99", x.CompletionMSP99)
	row.float("completion_ms_max", x.CompletionMSMax)
	row.float("peak_arrivals", x.PeakArrivals)
	row.int("waves", int64(len(x.WaveHeights)))
	row.int("wave_threshold", x.WaveThreshold)
	row.float("bin_s", time.Duration(x.Bin).Seconds())
	row.float("give_ups", x.GiveUps)
	row.float("duplicates", x.Duplicates)
	row.float("load_peak", x.LoadPeak)
	row.float("amplification", x.Amplification)
	row.float("wasted", x.Wasted)
	row.float("withheld", x.Withheld)
	row.float("failed", x.Failed)
	row.float("retried_wrongly", x.RetriedWrongly)
	if x.Capacity > 0 {
		row.float("capacity", x.Capacity)
	}
	row.optional("retry_after_refused_share", x.RetryAfterRefusedShare)
}
