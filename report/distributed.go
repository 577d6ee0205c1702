package report

import (
	"slices"
	"strconv"
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
	// Designs are the figures of the designs beyond the notes' (fleet_designs.go).
	Designs
}

func HasDistributed(r *Report) bool {
	for _, x := range r.Results {
		if x.Distributed != nil {
			return true
		}
	}
	return false
}

// FleetTableColumns are the columns of a fleet run's table, in order.
var FleetTableColumns = []Column[Result]{
	{Name: "algorithm", Header: "algorithm", Key: true, Cell: func(x Result) string { return x.Algorithm }},
	{Name: "variant", Header: "variant", Key: true, Cell: func(x Result) string { return FleetOf(x).Variant }},
	{Name: "placement", Header: "placement", Cell: func(x Result) string { return FleetOf(x).Placement }},
	{Name: "balancer", Header: "balancer", Cell: func(x Result) string { return FleetOf(x).Balancer }},
	{Name: "nodes", Header: "nodes", Cell: func(x Result) string {
		d := FleetOf(x)
		nodes := strconv.Itoa(d.Nodes)
		if d.NodesMax != d.Nodes {
			nodes += "→" + strconv.Itoa(d.NodesMax)
		}
		return nodes
	}},
	{Name: "requests", Header: "requests", Cell: func(x Result) string { return strconv.FormatInt(x.Requests, 10) }},
	{Name: "admitted", Header: "admitted", Cell: func(x Result) string { return strconv.FormatInt(x.Admitted, 10) }},
	{Name: "rejected", Header: "refused", Cell: func(x Result) string { return strconv.FormatInt(x.Rejected, 10) }},
	{Name: "legit_reject_rate", Header: "legit\nrefused", Cell: func(x Result) string { return optionalPercent(x.LegitRejectRate) }},
	{Name: "effective_limit", Header: "effective\nlimit", Cell: func(x Result) string { return strconv.FormatInt(FleetOf(x).EffectiveLimit, 10) }},
	{Name: "over_admission", Header: "over-\nadmission", Cell: func(x Result) string { return strconv.FormatFloat(x.OverAdmission, 'f', 2, 64) }},
	{Name: "client_share", Header: "client\nshare", Cell: func(x Result) string {
		d := FleetOf(x)
		if d.ClientShareMax == 0 {
			return "-"
		}
		share := strconv.FormatFloat(d.ClientShareMin, 'f', 2, 64)
		if d.ClientShareMax != d.ClientShareMin {
			share += "–" + strconv.FormatFloat(d.ClientShareMax, 'f', 2, 64)
		}
		return share
	}},
	{Name: "store_round_trips", Header: "round trips\nper decision", Cell: func(x Result) string {
		return strconv.FormatFloat(FleetOf(x).StoreRoundTrips, 'f', 3, 64)
	}},
	{Name: "node_peak_window_admitted", Header: "node\npeak", Cell: func(x Result) string {
		return strconv.FormatInt(FleetOf(x).NodePeakWindowAdmitted, 10)
	}},
	{Name: "leases_outstanding_max", Header: "leased,\nmost", Cell: func(x Result) string {
		d := FleetOf(x)
		return dashUnless(d.LeasesOutstandingMax, d.LeasesOutstandingMax > 0)
	}},
	{Name: "outage_admitted", Header: "outage\nadmitted", Cell: func(x Result) string {
		d := FleetOf(x)
		return dashUnless(d.OutageAdmitted, d.Alerts > 0)
	}},
	{Name: "outage_refused", Header: "outage\nrefused", Cell: func(x Result) string {
		d := FleetOf(x)
		return dashUnless(d.OutageRefused, d.Alerts > 0)
	}},
	{Name: "outage_node_peak", Header: "outage\nnode peak", Cell: func(x Result) string {
		d := FleetOf(x)
		return dashUnless(d.OutageNodePeak, d.Alerts > 0)
	}},
	{Name: "guard_limit", Header: "guard", Cell: func(x Result) string {
		d := FleetOf(x)
		return dashUnless(d.GuardLimit, d.GuardLimit > 0)
	}},
	{Name: "alerts", Header: "alerts", Cell: func(x Result) string { return strconv.Itoa(FleetOf(x).Alerts) }},
	{Name: "blocked_forever", Header: "blocked\nforever", Cell: func(x Result) string { return strconv.FormatInt(FleetOf(x).BlockedForever, 10) }},
	{Name: "leaked_keys", Header: "leaked\nkeys", Cell: func(x Result) string { return strconv.FormatInt(FleetOf(x).LeakedKeys, 10) }},
	{Name: "added_latency_ms_mean", Header: "latency\nms", Cell: func(x Result) string {
		return strconv.FormatFloat(FleetOf(x).AddedLatencyMeanMS, 'f', 2, 64)
	}},
	{Name: "added_latency_ms_p50", Header: "latency\np50 ms", Cell: func(x Result) string {
		d := FleetOf(x)
		return msUnless(d.AddedLatencyP50MS, d.AddedLatencyMaxMS > 0)
	}},
	{Name: "added_latency_ms_p99", Header: "latency\np99 ms", Cell: func(x Result) string {
		d := FleetOf(x)
		return msUnless(d.AddedLatencyP99MS, d.AddedLatencyMaxMS > 0)
	}},
	{Name: "store_timeouts", Header: "store\ntimeouts", Cell: func(x Result) string {
		d := FleetOf(x)
		return dashUnless(d.StoreTimeouts, d.Alerts > 0)
	}},
	{Name: "breaker_open_decisions", Header: "breaker\nopen", Cell: func(x Result) string {
		d := FleetOf(x)
		return dashUnless(d.BreakerOpenDecisions, d.Alerts > 0)
	}},
	{Name: "stale_reads", Header: "stale\nreads", Cell: func(x Result) string {
		d := FleetOf(x)
		return dashUnless(d.StaleReads, d.Placement == "shared-racy")
	}},
	{Name: "added_latency_ms", Header: "latency ms\np50–p99", Cell: func(x Result) string {
		d := FleetOf(x)
		if d.AddedLatencyMaxMS == 0 {
			return "-"
		}
		p50, p99 := strconv.FormatFloat(d.AddedLatencyP50MS, 'f', 2, 64), strconv.FormatFloat(d.AddedLatencyP99MS, 'f', 2, 64)
		if p50 == p99 {
			return p50
		}
		return p50 + "–" + p99
	}},
	{Name: "peer_hops", Header: "peer\nhops", Cell: func(x Result) string {
		d := FleetOf(x)
		return floatUnless(d.PeerHops, 3, peersInPlay(d))
	}},
	{Name: "peer_messages", Header: "peer\nmsgs", Cell: func(x Result) string {
		d := FleetOf(x)
		return floatUnless(d.PeerMessages, 3, peersInPlay(d))
	}},
	{Name: "membership_over_admission", Header: "after a\nnode change", Cell: func(x Result) string {
		d := FleetOf(x)
		return floatUnless(d.MembershipOverAdmission, 2, d.NodesMax != d.Nodes && (d.Placement == "owner" || d.SyncTo == "owner"))
	}},
	{Name: "failover_over_admission", Header: "after a\nfailover", Cell: func(x Result) string {
		d := FleetOf(x)
		return floatUnless(d.FailoverOverAdmission, 2, d.Failovers+d.Reshards > 0)
	}},
	{Name: "free_passes", Header: "free\npasses", Cell: func(x Result) string {
		d := FleetOf(x)
		return dashUnless(d.FreePasses, storeLosesCounts(d))
	}},
	{Name: "free_pass_keys", Header: "keys with\na free pass", Cell: func(x Result) string {
		d := FleetOf(x)
		return dashUnless(d.FreePassKeys, storeLosesCounts(d))
	}},
	{Name: "evicted_keys", Header: "evicted\nor OOM", Cell: func(x Result) string {
		// Under noeviction nothing is evicted: the cell counts the writes refused instead.
		d := FleetOf(x)
		if d.EvictionPolicy == "noeviction" {
			return "OOM " + strconv.FormatInt(d.OOMErrors, 10)
		}
		return dashUnless(d.EvictedKeys, d.EvictionPolicy != "")
	}},
	{Name: "oom_errors", Header: "OOM\nrefusals", Cell: func(x Result) string {
		d := FleetOf(x)
		return dashUnless(d.OOMErrors, d.EvictionPolicy == "noeviction")
	}},
	{Name: "store_keys_max", Header: "store keys,\nmost", Cell: func(x Result) string {
		d := FleetOf(x)
		return dashUnless(d.StoreKeysMax, d.EvictionPolicy != "")
	}},
	{Name: "ownership_moves", Header: "keys\nmoved", Cell: func(x Result) string {
		d := FleetOf(x)
		return dashUnless(d.OwnershipMoves, d.Placement == "owner" || d.SyncTo == "owner")
	}},
}

// FleetOf is x's fleet figures, zero for a result that ran on no fleet.
func FleetOf(x Result) *Distributed {
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

func msUnless(v float64, show bool) string { return floatUnless(v, 2, show) }

// floatUnless prints v with prec decimals, or "-" where the figure means nothing.
func floatUnless(v float64, prec int, show bool) string {
	if !show {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

// FleetPreferred are the columns a fleet table shows by default, the most important
// first: what the fleet enforced and who it refused, then what the scenario is about
// (outages, leases, crashes, races, latency), then the rest.
func FleetPreferred(r *Report) []string {
	d := func(f func(d *Distributed) bool) bool {
		return AnyResult(r.Results, func(x Result) bool { return f(FleetOf(x)) })
	}
	return slices.Concat(
		[]string{"over_admission", "effective_limit", "legit_reject_rate", "nodes"},
		when(d(func(d *Distributed) bool { return d.Alerts > 0 }), "outage_admitted", "outage_refused", "guard_limit"),
		when(d(func(d *Distributed) bool { return d.LeasesOutstandingMax > 0 }), "leases_outstanding_max"),
		when(d(func(d *Distributed) bool { return d.BlockedForever > 0 || d.LeakedKeys > 0 }), "blocked_forever", "leaked_keys"),
		when(d(func(d *Distributed) bool { return d.Placement == "shared-racy" }), "stale_reads"),
		when(d(storeLosesCounts), "free_passes"),
		when(d(func(d *Distributed) bool { return d.Failovers+d.Reshards > 0 }), "failover_over_admission"),
		when(d(func(d *Distributed) bool { return d.EvictionPolicy != "" }), "evicted_keys"),
		when(d(peersInPlay), "peer_hops", "added_latency_ms", "peer_messages"),
		[]string{"store_round_trips"},
		when(d(func(d *Distributed) bool { return d.AddedLatencyMaxMS > 0 && !peersInPlay(d) }), "added_latency_ms_mean", "added_latency_ms_p99"),
		[]string{"client_share", "node_peak_window_admitted"},
		when(d(func(d *Distributed) bool { return d.Alerts > 0 }), "store_timeouts", "breaker_open_decisions", "outage_node_peak"),
		[]string{"placement", "balancer", "admitted", "requests"},
	)
}
