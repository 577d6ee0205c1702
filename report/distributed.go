package report

import (
	"fmt"
	"strconv"
	"time"
)

// Distributed is what a run on a fleet of nodes measures beyond the single-limiter
// figures. It is embedded in Result as a pointer, so its fields appear in a result's JSON
// only for fleet runs. JSON names follow DESIGN.md's "Distributed runs".
type Distributed struct {
	// Variant names the fleet variant of the scenario this result is for.
	Variant   string `json:"variant"`
	Placement string `json:"placement"`
	Balancer  string `json:"balancer"`
	// Nodes is the node count at the start and NodesMax the most the fleet had.
	Nodes    int `json:"nodes"`
	NodesMax int `json:"nodes_max"`
	// Store is the face of the shared store: "model", "miniredis", "redis", or "" for none.
	Store string `json:"store"`
	// Clock is whose clock the shared store decided by, "node" or "store" ("" for none);
	// Skew is how far the node clocks spread, ±Skew.
	Clock string   `json:"clock"`
	Skew  Duration `json:"skew"`
	// EffectiveLimit is the most cost admitted for one key in any trailing window across
	// the whole fleet: the limit the fleet really enforced (compare with policy.limit).
	EffectiveLimit int64 `json:"effective_limit"`
	// ClientShareMin and ClientShareMax are, over the clients refused at least once, the
	// least and most of the advertised limit they got (their peak window over the limit).
	ClientShareMin float64 `json:"client_share_min"`
	ClientShareMax float64 `json:"client_share_max"`
	// StoreRoundTrips is store round trips per decision; StoreRoundTripsTotal their count.
	StoreRoundTrips      float64 `json:"store_round_trips"`
	StoreRoundTripsTotal int64   `json:"store_round_trips_total"`
	// NodePeakWindowAdmitted is the most one node admitted for one key in any window.
	NodePeakWindowAdmitted int64 `json:"node_peak_window_admitted"`
	// GuardLimit is the node-local guard's limit per key (two-tier, fail-open-local).
	GuardLimit int64 `json:"guard_limit,omitempty"`
	// LeasesOutstandingMax is the most leased, unspent tokens the nodes held at once for
	// one key: the bound on what leasing can over-admit.
	LeasesOutstandingMax int64 `json:"leases_outstanding_max"`
	// OutageAdmitted and OutageRefused count decisions taken while the store was down;
	// OutageOverAdmission is the peak window of one key that ended inside an outage over
	// the limit.
	OutageAdmitted      int64   `json:"outage_admitted"`
	OutageRefused       int64   `json:"outage_refused"`
	OutageOverAdmission float64 `json:"outage_over_admission"`
	// OutageNodePeak is the most one node admitted for one key in any window counting only
	// what it admitted while the store was down: under fail-open-local, at most its guard.
	OutageNodePeak int64 `json:"outage_node_peak"`
	// Alerts counts the alerts the fleet raised; Alert is the first one's text.
	Alerts int    `json:"alerts"`
	Alert  string `json:"alert,omitempty"`
	// Crashes counts processes that died between INCR and EXPIRE.
	Crashes int64 `json:"crashes"`
	// BlockedForever counts keys left without a TTL whose count has reached the limit:
	// each refuses its client for good. LeakedKeys counts the other keys left without a
	// TTL (they are never read again, or not yet full), LeakedBytes their Redis memory
	// from the calibrated model.
	BlockedForever int64 `json:"blocked_forever"`
	LeakedKeys     int64 `json:"leaked_keys"`
	LeakedBytes    int64 `json:"leaked_bytes"`
	// AddedLatencyMeanMS, AddedLatencyMaxMS, AddedLatencyP50MS and AddedLatencyP99MS are
	// what each decision waited for the store: its round trips (faults: latency), and the
	// store client's timeout when it called a store that was down. The percentiles are
	// exact (nearest rank).
	AddedLatencyMeanMS float64 `json:"added_latency_ms_mean"`
	AddedLatencyMaxMS  float64 `json:"added_latency_ms_max"`
	AddedLatencyP50MS  float64 `json:"added_latency_ms_p50"`
	AddedLatencyP99MS  float64 `json:"added_latency_ms_p99"`
	// StoreLatencyMS is the store's round-trip time in this variant.
	StoreLatencyMS float64 `json:"store_latency_ms"`
	// StoreTimeouts counts decisions that called the store while it was down and waited
	// out the client's timeout before the outage policy decided.
	StoreTimeouts int64 `json:"store_timeouts"`
	// BreakerOpenDecisions counts decisions a node's open (or half-open, probe in flight)
	// circuit breaker sent to the outage policy without calling the store; BreakerOpens
	// how many times the nodes' breakers opened.
	BreakerOpenDecisions int64 `json:"breaker_open_decisions"`
	BreakerOpens         int64 `json:"breaker_opens"`
	// StaleReads counts shared-racy decisions whose read missed a write another node had
	// in flight to the same key; LostWrites the writes that landed while the store was down.
	StaleReads int64 `json:"stale_reads"`
	LostWrites int64 `json:"lost_writes"`
	// Events are the variant's store outages and node-count changes in time order, for
	// the charts to mark (the scenario file already states them; JSON leaves them out).
	Events []FleetEvent `json:"-"`
	// Designs are the figures of the designs beyond the notes' (fleet_designs.go).
	Designs
}

func hasDistributed(r *Report) bool {
	for _, x := range r.Results {
		if x.Distributed != nil {
			return true
		}
	}
	return false
}

// distributedColumns are the columns of a fleet run's table.
var distributedColumns = []string{
	"algorithm", "variant", "placement", "balancer", "nodes", "requests", "admitted", "rejected", "legit_reject_rate",
	"effective_limit", "over_admission", "client_share", "store_round_trips", "node_peak",
	"leases_outstanding_max", "outage_admitted", "outage_refused", "outage_node_peak", "guard", "alerts", "blocked_forever",
	"leaked_keys", "added_latency_ms", "latency_p50_ms", "latency_p99_ms", "store_timeouts", "breaker_open",
	"stale_reads", "peer_hops", "peer_messages", "free_passes", "evicted",
}

// DistributedTable is the human table of a fleet run.
func DistributedTable(r *Report) Table {
	t := Table{
		Title: fmt.Sprintf("%s — limit %d per %s, burst %d, key %s, seed %d (fleet)",
			r.Scenario, r.Policy.Limit, time.Duration(r.Policy.Window), r.Policy.Burst, r.Key, r.Seed),
		Header: distributedColumns,
	}
	for _, x := range r.Results {
		d := x.Distributed
		if d == nil {
			d = &Distributed{}
		}
		nodes := strconv.Itoa(d.Nodes)
		if d.NodesMax != d.Nodes {
			nodes += "→" + strconv.Itoa(d.NodesMax)
		}
		share := "-"
		if d.ClientShareMax > 0 {
			share = strconv.FormatFloat(d.ClientShareMin, 'f', 2, 64)
			if d.ClientShareMax != d.ClientShareMin {
				share += "–" + strconv.FormatFloat(d.ClientShareMax, 'f', 2, 64)
			}
		}
		dash := func(v int64, show bool) string {
			if !show {
				return "-"
			}
			return strconv.FormatInt(v, 10)
		}
		ms := func(v float64, show bool) string {
			if !show {
				return "-"
			}
			return strconv.FormatFloat(v, 'f', 2, 64)
		}
		t.Rows = append(t.Rows, append([]string{
			x.Algorithm, d.Variant, d.Placement, d.Balancer, nodes,
			strconv.FormatInt(x.Requests, 10), strconv.FormatInt(x.Admitted, 10), strconv.FormatInt(x.Rejected, 10),
			optionalPercent(x.LegitRejectRate),
			strconv.FormatInt(d.EffectiveLimit, 10), strconv.FormatFloat(x.OverAdmission, 'f', 2, 64), share,
			strconv.FormatFloat(d.StoreRoundTrips, 'f', 3, 64), strconv.FormatInt(d.NodePeakWindowAdmitted, 10),
			dash(d.LeasesOutstandingMax, d.LeasesOutstandingMax > 0),
			dash(d.OutageAdmitted, d.Alerts > 0), dash(d.OutageRefused, d.Alerts > 0), dash(d.OutageNodePeak, d.Alerts > 0),
			dash(d.GuardLimit, d.GuardLimit > 0), strconv.Itoa(d.Alerts),
			strconv.FormatInt(d.BlockedForever, 10), strconv.FormatInt(d.LeakedKeys, 10),
			strconv.FormatFloat(d.AddedLatencyMeanMS, 'f', 2, 64),
			ms(d.AddedLatencyP50MS, d.AddedLatencyMaxMS > 0), ms(d.AddedLatencyP99MS, d.AddedLatencyMaxMS > 0),
			dash(d.StoreTimeouts, d.Alerts > 0), dash(d.BreakerOpenDecisions, d.Alerts > 0),
			dash(d.StaleReads, d.Placement == "shared-racy"),
		}, designCells(d)...))
		if d.Alert != "" {
			t.Notes = append(t.Notes, fmt.Sprintf("%s %s: alert: %s", x.Algorithm, d.Variant, d.Alert))
		}
	}
	return t
}
