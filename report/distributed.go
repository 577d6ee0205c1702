package report

import (
	"fmt"
	"slices"
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
	// TTL (they are never read again, or not yet full), LeakedBytes their Redis memory:
	// MEMORY USAGE of each on a real server, else the size a real server gives that
	// counter under that name (store.CounterBytes, calibrated).
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
}

func hasDistributed(r *Report) bool {
	for _, x := range r.Results {
		if x.Distributed != nil {
			return true
		}
	}
	return false
}

// fleetTableColumns are the columns of a fleet run's table, in order.
var fleetTableColumns = []column[Result]{
	{name: "algorithm", header: "algorithm", key: true, cell: func(x Result) string { return x.Algorithm }},
	{name: "variant", header: "variant", key: true, cell: func(x Result) string { return fleetOf(x).Variant }},
	{name: "placement", header: "placement", cell: func(x Result) string { return fleetOf(x).Placement }},
	{name: "balancer", header: "balancer", cell: func(x Result) string { return fleetOf(x).Balancer }},
	{name: "nodes", header: "nodes", cell: func(x Result) string {
		d := fleetOf(x)
		nodes := strconv.Itoa(d.Nodes)
		if d.NodesMax != d.Nodes {
			nodes += "→" + strconv.Itoa(d.NodesMax)
		}
		return nodes
	}},
	{name: "requests", header: "requests", cell: func(x Result) string { return strconv.FormatInt(x.Requests, 10) }},
	{name: "admitted", header: "admitted", cell: func(x Result) string { return strconv.FormatInt(x.Admitted, 10) }},
	{name: "rejected", header: "refused", cell: func(x Result) string { return strconv.FormatInt(x.Rejected, 10) }},
	{name: "legit_reject_rate", header: "legit\nrefused", cell: func(x Result) string { return optionalPercent(x.LegitRejectRate) }},
	{name: "effective_limit", header: "effective\nlimit", cell: func(x Result) string { return strconv.FormatInt(fleetOf(x).EffectiveLimit, 10) }},
	{name: "over_admission", header: "over-\nadmission", cell: func(x Result) string { return strconv.FormatFloat(x.OverAdmission, 'f', 2, 64) }},
	{name: "client_share", header: "client\nshare", cell: func(x Result) string {
		d := fleetOf(x)
		if d.ClientShareMax == 0 {
			return "-"
		}
		share := strconv.FormatFloat(d.ClientShareMin, 'f', 2, 64)
		if d.ClientShareMax != d.ClientShareMin {
			share += "–" + strconv.FormatFloat(d.ClientShareMax, 'f', 2, 64)
		}
		return share
	}},
	{name: "store_round_trips", header: "round trips\nper decision", cell: func(x Result) string {
		return strconv.FormatFloat(fleetOf(x).StoreRoundTrips, 'f', 3, 64)
	}},
	{name: "node_peak_window_admitted", header: "node\npeak", cell: func(x Result) string {
		return strconv.FormatInt(fleetOf(x).NodePeakWindowAdmitted, 10)
	}},
	{name: "leases_outstanding_max", header: "leased,\nmost", cell: func(x Result) string {
		d := fleetOf(x)
		return dashUnless(d.LeasesOutstandingMax, d.LeasesOutstandingMax > 0)
	}},
	{name: "outage_admitted", header: "outage\nadmitted", cell: func(x Result) string {
		d := fleetOf(x)
		return dashUnless(d.OutageAdmitted, d.Alerts > 0)
	}},
	{name: "outage_refused", header: "outage\nrefused", cell: func(x Result) string {
		d := fleetOf(x)
		return dashUnless(d.OutageRefused, d.Alerts > 0)
	}},
	{name: "outage_node_peak", header: "outage\nnode peak", cell: func(x Result) string {
		d := fleetOf(x)
		return dashUnless(d.OutageNodePeak, d.Alerts > 0)
	}},
	{name: "guard_limit", header: "guard", cell: func(x Result) string {
		d := fleetOf(x)
		return dashUnless(d.GuardLimit, d.GuardLimit > 0)
	}},
	{name: "alerts", header: "alerts", cell: func(x Result) string { return strconv.Itoa(fleetOf(x).Alerts) }},
	{name: "blocked_forever", header: "blocked\nforever", cell: func(x Result) string { return strconv.FormatInt(fleetOf(x).BlockedForever, 10) }},
	{name: "leaked_keys", header: "leaked\nkeys", cell: func(x Result) string { return strconv.FormatInt(fleetOf(x).LeakedKeys, 10) }},
	{name: "added_latency_ms_mean", header: "latency\nms", cell: func(x Result) string {
		return strconv.FormatFloat(fleetOf(x).AddedLatencyMeanMS, 'f', 2, 64)
	}},
	{name: "added_latency_ms_p50", header: "latency\np50 ms", cell: func(x Result) string {
		d := fleetOf(x)
		return msUnless(d.AddedLatencyP50MS, d.AddedLatencyMaxMS > 0)
	}},
	{name: "added_latency_ms_p99", header: "latency\np99 ms", cell: func(x Result) string {
		d := fleetOf(x)
		return msUnless(d.AddedLatencyP99MS, d.AddedLatencyMaxMS > 0)
	}},
	{name: "store_timeouts", header: "store\ntimeouts", cell: func(x Result) string {
		d := fleetOf(x)
		return dashUnless(d.StoreTimeouts, d.Alerts > 0)
	}},
	{name: "breaker_open_decisions", header: "breaker\nopen", cell: func(x Result) string {
		d := fleetOf(x)
		return dashUnless(d.BreakerOpenDecisions, d.Alerts > 0)
	}},
	{name: "stale_reads", header: "stale\nreads", cell: func(x Result) string {
		d := fleetOf(x)
		return dashUnless(d.StaleReads, d.Placement == "shared-racy")
	}},
}

// fleetOf is x's fleet figures, zero for a result that ran on no fleet.
func fleetOf(x Result) *Distributed {
	if x.Distributed == nil {
		return &Distributed{}
	}
	return x.Distributed
}

// dashUnless prints v, or "-" where the figure means nothing for the run.
func dashUnless(v int64, show bool) string {
	if !show {
		return "-"
	}
	return strconv.FormatInt(v, 10)
}

func msUnless(v float64, show bool) string {
	if !show {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// fleetPreferred are the columns a fleet table shows by default, the most important
// first: what the fleet enforced and who it refused, then what the scenario is about
// (outages, leases, crashes, races, latency), then the rest.
func fleetPreferred(r *Report) []string {
	d := func(f func(d *Distributed) bool) bool {
		return anyResult(r.Results, func(x Result) bool { return f(fleetOf(x)) })
	}
	return slices.Concat(
		[]string{"over_admission", "effective_limit", "legit_reject_rate", "nodes"},
		when(d(func(d *Distributed) bool { return d.Alerts > 0 }), "outage_admitted", "outage_refused", "guard_limit"),
		when(d(func(d *Distributed) bool { return d.LeasesOutstandingMax > 0 }), "leases_outstanding_max"),
		when(d(func(d *Distributed) bool { return d.BlockedForever > 0 || d.LeakedKeys > 0 }), "blocked_forever", "leaked_keys"),
		when(d(func(d *Distributed) bool { return d.Placement == "shared-racy" }), "stale_reads"),
		[]string{"store_round_trips"},
		when(d(func(d *Distributed) bool { return d.AddedLatencyMaxMS > 0 }), "added_latency_ms_mean", "added_latency_ms_p99"),
		[]string{"client_share", "node_peak_window_admitted"},
		when(d(func(d *Distributed) bool { return d.Alerts > 0 }), "store_timeouts", "breaker_open_decisions", "outage_node_peak"),
		[]string{"placement", "balancer", "admitted", "requests"},
	)
}

// DistributedTable is the human table of a fleet run, with the columns c chooses; each
// alert is a note under it.
func DistributedTable(r *Report, c Columns) Table {
	t := chooseTable(fmt.Sprintf("%s — limit %d per %s, burst %d, key %s, seed %d (fleet)",
		r.Scenario, r.Policy.Limit, time.Duration(r.Policy.Window), r.Policy.Burst, r.Key, r.Seed),
		fleetTableColumns, r.Results, c, fleetPreferred(r))
	for _, x := range r.Results {
		if d := x.Distributed; d != nil && d.Alert != "" {
			t.Notes = append(t.Notes, fmt.Sprintf("%s %s: alert: %s", x.Algorithm, d.Variant, d.Alert))
		}
	}
	return t
}
