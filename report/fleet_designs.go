package report

import (
	"fmt"
	"time"
)

// Designs are the figures of the placements and store faults beyond the design notes':
// an owner per key on a consistent-hash ring, eventually consistent global counts, store
// failovers and slot moves, eviction under maxmemory, partitions. Distributed embeds it,
// so its fields are among a fleet result's JSON fields; each is zero (or empty) where its
// design is not in play.
type Designs struct {
	// PeerHops are the forwarded hops per decision (owner placement; global-sync deciding
	// synchronously through the owner); PeerMessages the peer requests per decision
	// (batched forwards share one; a global-sync node's exchanges with the owner).
	PeerHops     float64 `json:"peer_hops"`
	PeerMessages float64 `json:"peer_messages"`
	// Forward is how the owner placement sends a request to its owner, "direct" or
	// "batched".
	Forward string `json:"forward"`
	// Sync is a global-sync node's exchange interval and SyncTo its target ("owner",
	// "store"); SyncExchanges the exchanges the nodes made.
	Sync          Duration `json:"sync"`
	SyncTo        string   `json:"sync_to"`
	SyncExchanges int64    `json:"sync_exchanges"`
	// OwnershipMoves counts keys whose owner changed at a membership change;
	// MembershipOverAdmission is the most one key's trailing window held in the window
	// after a change, over what it held there in the same fleet run without the change
	// (1.00: the change let nothing more through; a bucket's own burst is not charged to
	// it). Zero where no owners move (placements other than owner and global-sync to
	// owners).
	OwnershipMoves          int64   `json:"ownership_moves"`
	MembershipOverAdmission float64 `json:"membership_over_admission"`
	// Failovers and Reshards count the store's failovers and slot moves; FailoverLag is
	// the longest replica lag; FailoverOverAdmission the most one key's trailing window
	// held, over the limit, in the window after a failover or the start of a move.
	Failovers             int      `json:"failovers"`
	Reshards              int      `json:"reshards"`
	FailoverLag           Duration `json:"failover_lag"`
	FailoverOverAdmission float64  `json:"failover_over_admission"`
	// FreePasses are the requests the fleet admitted beyond those a store that lost
	// nothing would have admitted of the same requests, summed over keys; FreePassKeys the
	// keys that got any.
	FreePasses   int64 `json:"free_passes"`
	FreePassKeys int64 `json:"free_pass_keys"`
	// MaxMemory (bytes) and EvictionPolicy put the store under memory pressure;
	// EvictedKeys, OOMErrors (requests whose write the store refused), StoreKeysMax and
	// StoreBytesMax (the most its keys held at once) are what came of it.
	MaxMemory      int64  `json:"maxmemory"`
	EvictionPolicy string `json:"eviction_policy"`
	EvictedKeys    int64  `json:"evicted_keys"`
	OOMErrors      int64  `json:"oom_errors"`
	StoreKeysMax   int64  `json:"store_keys_max"`
	StoreBytesMax  int64  `json:"store_bytes_max"`
	// PartitionedNodes is the most nodes a partition cut off at once.
	PartitionedNodes int `json:"partitioned_nodes"`
}

// afterEvents measures, for a fleet meter, the most one key's trailing window held in the
// window after a membership change, and after a failover or the start of a slot move.
type afterEvents struct {
	window                       int64   // ns
	membership, failovers        []int64 // ns since the Unix epoch
	membershipPeak, failoverPeak int64
}

// After has m measure the windows after the fleet's membership changes and after its
// failovers and slot moves (at, ns since the Unix epoch; window, the policy's).
func (m *FleetMeter) After(membership, failovers []int64) {
	m.afterEvents = afterEvents{window: m.window, membership: membership, failovers: failovers}
}

func (a *afterEvents) observe(now, sum int64) {
	for _, at := range a.membership {
		if now >= at && now < at+a.window {
			a.membershipPeak = max(a.membershipPeak, sum)
		}
	}
	for _, at := range a.failovers {
		if now >= at && now < at+a.window {
			a.failoverPeak = max(a.failoverPeak, sum)
		}
	}
}

func (a *afterEvents) fill(d *Distributed, limit int64) {
	if len(a.membership) > 0 {
		d.MembershipOverAdmission = float64(a.membershipPeak) / float64(limit)
	}
	if len(a.failovers) > 0 {
		d.FailoverOverAdmission = float64(a.failoverPeak) / float64(limit)
	}
}

// peersInPlay reports whether a fleet's nodes talk to each other: owners forward to, or
// global-sync nodes exchange with, their peers.
func peersInPlay(d *Distributed) bool {
	return d.Placement == "owner" || d.SyncTo == "owner" || d.PeerHops > 0 || d.PeerMessages > 0
}

// storeLosesCounts reports whether a fleet's store can forget counts: it fails over, moves
// slots or evicts.
func storeLosesCounts(d *Distributed) bool {
	return d.Failovers+d.Reshards > 0 || d.EvictionPolicy != ""
}

// designCSVCells fills a fleet result's row under the results CSV's design columns.
func designCSVCells(row *csvRow, d *Designs) {
	row.float("peer_hops", d.PeerHops)
	row.float("peer_messages", d.PeerMessages)
	row.set("forward", d.Forward)
	row.float("sync_s", time.Duration(d.Sync).Seconds())
	row.set("sync_to", d.SyncTo)
	row.int("sync_exchanges", d.SyncExchanges)
	row.int("ownership_moves", d.OwnershipMoves)
	row.float("membership_over_admission", d.MembershipOverAdmission)
	row.int("failovers", int64(d.Failovers))
	row.int("reshards", int64(d.Reshards))
	row.float("failover_lag_s", time.Duration(d.FailoverLag).Seconds())
	row.float("failover_over_admission", d.FailoverOverAdmission)
	row.int("free_passes", d.FreePasses)
	row.int("free_pass_keys", d.FreePassKeys)
	row.int("maxmemory", d.MaxMemory)
	row.set("eviction_policy", d.EvictionPolicy)
	row.int("evicted_keys", d.EvictedKeys)
	row.int("oom_errors", d.OOMErrors)
	row.int("store_keys_max", d.StoreKeysMax)
	row.int("store_bytes_max", d.StoreBytesMax)
	row.int("partitioned_nodes", int64(d.PartitionedNodes))
}

// designParam is a design's parameter a report's variants may sweep, drawn against its
// outcomes when they do.
type designParam struct {
	Name   string                               // the figure's file stem
	Title  string                               // what the figure answers
	XLabel string                               // with units
	LogX   bool                                 // values span orders of magnitude
	X      func(d *Distributed) (float64, bool) // the parameter, when the result has it
	Line   func(x Result) string                // the line a result belongs to
	Panels []designPanel                        // the outcomes, one panel each
}

type designPanel struct {
	Title, YLabel string
	Y             func(x Result) float64
	Limit         bool // draw the advertised limit
	LogY          bool // values span orders of magnitude
}

var DesignParams = []designParam{
	{
		Name: "sync", Title: "effective limit and exchanges against the sync interval", XLabel: "sync interval (ms)", LogX: true,
		X: func(d *Distributed) (float64, bool) {
			return float64(time.Duration(d.Sync)) / float64(time.Millisecond), d.Placement == "global-sync" && d.Sync > 0
		},
		Line: func(x Result) string {
			d := x.Distributed
			return fmt.Sprintf("%s, %d nodes, to the %s", x.Algorithm, d.Nodes, d.SyncTo)
		},
		Panels: []designPanel{
			{Title: "effective limit", YLabel: "effective limit", Y: func(x Result) float64 { return float64(x.Distributed.EffectiveLimit) }, Limit: true},
			{Title: "exchanges per decision (the target's load)", YLabel: "exchanges per decision", LogY: true, Y: func(x Result) float64 {
				if x.Requests > 0 {
					return float64(x.Distributed.SyncExchanges) / float64(x.Requests)
				}
				return 0
			}},
		},
	},
	{
		Name: "failover-lag", Title: "effective limit and free passes against the replica's lag at a failover", XLabel: "replica lag at the failover (s)",
		X: func(d *Distributed) (float64, bool) {
			return time.Duration(d.FailoverLag).Seconds(), d.Failovers > 0 && d.Reshards == 0
		},
		Line: func(x Result) string { return fmt.Sprintf("%s, %s", x.Algorithm, x.Distributed.Placement) },
		Panels: []designPanel{
			{Title: "effective limit", YLabel: "effective limit", Y: func(x Result) float64 { return float64(x.Distributed.EffectiveLimit) }, Limit: true},
			{Title: "free passes", YLabel: "requests admitted beyond a lossless store", Y: func(x Result) float64 { return float64(x.Distributed.FreePasses) }},
		},
	},
	{
		Name: "maxmemory", Title: "free passes, and the keys that got one, against the store's maxmemory", XLabel: "maxmemory (KiB)",
		X: func(d *Distributed) (float64, bool) {
			return float64(d.MaxMemory) / 1024, d.MaxMemory > 0
		},
		Line: func(x Result) string { return fmt.Sprintf("%s, %s", x.Algorithm, x.Distributed.EvictionPolicy) },
		Panels: []designPanel{
			{Title: "free passes", YLabel: "requests admitted beyond a lossless store", Y: func(x Result) float64 { return float64(x.Distributed.FreePasses) }},
			{Title: "keys that got a free pass", YLabel: "client keys", Y: func(x Result) float64 { return float64(x.Distributed.FreePassKeys) }},
		},
	},
}
