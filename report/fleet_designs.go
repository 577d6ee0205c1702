package report

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"gonum.org/v1/plot/vg"

	"github.com/rlsim/rlsim/report/chart"
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
	name   string                               // the figure's file stem
	title  string                               // what the figure answers
	xLabel string                               // with units
	logX   bool                                 // values span orders of magnitude
	x      func(d *Distributed) (float64, bool) // the parameter, when the result has it
	line   func(x Result) string                // the line a result belongs to
	panels []designPanel                        // the outcomes, one panel each
}

type designPanel struct {
	title, yLabel string
	y             func(x Result) float64
	limit         bool // draw the advertised limit
	logY          bool // values span orders of magnitude
}

var designParams = []designParam{
	{
		name: "sync", title: "effective limit and exchanges against the sync interval", xLabel: "sync interval (ms)", logX: true,
		x: func(d *Distributed) (float64, bool) {
			return float64(time.Duration(d.Sync)) / float64(time.Millisecond), d.Placement == "global-sync" && d.Sync > 0
		},
		line: func(x Result) string {
			d := x.Distributed
			return fmt.Sprintf("%s, %d nodes, to the %s", x.Algorithm, d.Nodes, d.SyncTo)
		},
		panels: []designPanel{
			{title: "effective limit", yLabel: "effective limit", y: func(x Result) float64 { return float64(x.Distributed.EffectiveLimit) }, limit: true},
			{title: "exchanges per decision (the target's load)", yLabel: "exchanges per decision", logY: true, y: func(x Result) float64 {
				if x.Requests > 0 {
					return float64(x.Distributed.SyncExchanges) / float64(x.Requests)
				}
				return 0
			}},
		},
	},
	{
		name: "failover-lag", title: "effective limit and free passes against the replica's lag at a failover", xLabel: "replica lag at the failover (s)",
		x: func(d *Distributed) (float64, bool) {
			return time.Duration(d.FailoverLag).Seconds(), d.Failovers > 0 && d.Reshards == 0
		},
		line: func(x Result) string { return fmt.Sprintf("%s, %s", x.Algorithm, x.Distributed.Placement) },
		panels: []designPanel{
			{title: "effective limit", yLabel: "effective limit", y: func(x Result) float64 { return float64(x.Distributed.EffectiveLimit) }, limit: true},
			{title: "free passes", yLabel: "requests admitted beyond a lossless store", y: func(x Result) float64 { return float64(x.Distributed.FreePasses) }},
		},
	},
	{
		name: "maxmemory", title: "free passes, and the keys that got one, against the store's maxmemory", xLabel: "maxmemory (KiB)",
		x: func(d *Distributed) (float64, bool) {
			return float64(d.MaxMemory) / 1024, d.MaxMemory > 0
		},
		line: func(x Result) string { return fmt.Sprintf("%s, %s", x.Algorithm, x.Distributed.EvictionPolicy) },
		panels: []designPanel{
			{title: "free passes", yLabel: "requests admitted beyond a lossless store", y: func(x Result) float64 { return float64(x.Distributed.FreePasses) }},
			{title: "keys that got a free pass", yLabel: "client keys", y: func(x Result) float64 { return float64(x.Distributed.FreePassKeys) }},
		},
	},
}

// DesignFigures draw, for every design parameter a report's variants sweep (two values or
// more), its outcomes against it: a panel per outcome, a line per algorithm and setting of
// the rest that was run at two values or more (the others stay in the table). A report
// that sweeps none has none.
func DesignFigures(r *Report) []*chart.Figure {
	var figs []*chart.Figure
	for _, p := range designParams {
		xs := map[float64]bool{}
		var lines []string
		byLine := map[string][]Result{}
		for _, x := range r.Results {
			if x.Distributed == nil {
				continue
			}
			v, ok := p.x(x.Distributed)
			if !ok {
				continue
			}
			xs[v] = true
			l := p.line(x)
			if byLine[l] == nil {
				lines = append(lines, l)
			}
			byLine[l] = append(byLine[l], x)
		}
		lines = slices.DeleteFunc(lines, func(l string) bool {
			at := map[float64]bool{}
			for _, x := range byLine[l] {
				v, _ := p.x(x.Distributed)
				at[v] = true
			}
			return len(at) < 2
		})
		if len(xs) < 2 || len(lines) == 0 {
			continue
		}
		fig := &chart.Figure{Name: p.name, Columns: len(p.panels),
			Meta: chart.Meta{Title: r.Scenario + ": " + p.title, Caption: Caption(r)}}
		fig.Width, fig.Height = 13*vg.Inch, 5*vg.Inch
		for _, dp := range p.panels {
			panel := chart.LinePanel{Title: dp.title, XLabel: p.xLabel, YLabel: dp.yLabel, LogX: p.logX, LogY: dp.logY, Markers: true}
			for _, l := range lines {
				s := chart.Series{Name: l}
				for _, x := range byLine[l] {
					v, _ := p.x(x.Distributed)
					s.Points = append(s.Points, chart.Point{X: v, Y: dp.y(x)})
				}
				slices.SortStableFunc(s.Points, func(a, b chart.Point) int { return cmp.Compare(a.X, b.X) })
				panel.Series = append(panel.Series, s)
			}
			if dp.limit {
				panel.Limits = []chart.HLine{{Name: fmt.Sprintf("advertised (%d)", r.Policy.Limit), Y: float64(r.Policy.Limit)}}
			}
			fig.Panels = append(fig.Panels, panel)
		}
		figs = append(figs, fig)
	}
	return figs
}
