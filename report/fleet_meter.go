package report

import (
	"slices"
	"time"

	"github.com/rlsim/rlsim/algorithms"
)

// FleetDecision is one decision of a fleet as its meter is told of it. It has the fields
// of cluster.Observation, in the same order, so a run converts one to the other.
type FleetDecision struct {
	// Key, Now (ns since the Unix epoch) and Cost are the request's; Node is the index
	// of the node that decided it.
	Key       uint32
	Node      int
	Now, Cost int64
	Allowed   bool
	// InOutage says the store was down and the placement uses it.
	InOutage bool
	// RoundTrips are the store round trips the decision made; Added is what it waited
	// for the store.
	RoundTrips int
	Added      time.Duration
	// TimedOut: it waited out the store client's timeout; BreakerOpen: an open breaker
	// decided it without the store; Crashed: the process died between INCR and EXPIRE.
	TimedOut, BreakerOpen, Crashed bool
	// LeasesOutstanding is, for a leased fleet, the tokens all nodes hold for the key.
	LeasesOutstanding int64
}

// FleetMeter measures a fleet of nodes from its decisions, fed from outside (the run
// wires cluster.Fleet.Observe to Observe): what one key got across the fleet and from
// each node in any trailing window, during the store's outages too, the store round
// trips and what the decisions waited. Its memory grows with keys and nodes, not with
// decisions, beyond the admissions inside one window.
type FleetMeter struct {
	limit  int64
	window int64 // ns

	keys  []fleetKey
	nodes []fleetNode

	decisions, roundTrips          int64
	outageAdmitted, outageRefused  int64
	outagePeak                     int64
	nodePeak, outageNodePeak       int64
	leasesOutstandingMax           int64
	crashes, timeouts, breakerOpen int64
	latency                        histogram
	afterEvents                    // the windows after a fleet's events (fleet_designs.go)
}

type fleetKey struct {
	admitted algorithms.Log // across the fleet, trailing window
	peak     int64
	refused  bool
}

type fleetNode struct {
	admitted     []algorithms.Log // per key, this node's admissions in the trailing window
	duringOutage []algorithms.Log // per key, this node's admissions while the store was down
}

// NewFleetMeter measures a fleet whose advertised policy is limit per window.
func NewFleetMeter(limit int64, window time.Duration) *FleetMeter {
	return &FleetMeter{limit: limit, window: int64(window)}
}

// grow returns s with index i in range, the slots it adds empty. Keys arrive one new id
// at a time, so the table doubles when full: append's own growth, a quarter at a time
// past 256 elements, allocates about five times the table's final size over its life,
// doubling twice.
func grow[T any](s []T, i int) []T {
	if i < len(s) {
		return s
	}
	if i >= cap(s) {
		s = slices.Grow(s, max(i+1, 2*cap(s))-len(s))
	}
	n := len(s)
	s = s[:i+1]
	clear(s[n:])
	return s
}

// Observe measures one decision; decisions come in the order the fleet finished them.
func (m *FleetMeter) Observe(d *FleetDecision) {
	m.decisions++
	m.roundTrips += int64(d.RoundTrips)
	m.latency.add(d.Added)
	if d.TimedOut {
		m.timeouts++
	}
	if d.BreakerOpen {
		m.breakerOpen++
	}
	if d.Crashed {
		m.crashes++
	}
	m.leasesOutstandingMax = max(m.leasesOutstandingMax, d.LeasesOutstanding)

	m.keys = grow(m.keys, int(d.Key))
	m.nodes = grow(m.nodes, d.Node)
	ks, nd := &m.keys[d.Key], &m.nodes[d.Node]
	ks.admitted.Expire(d.Now - m.window)
	nd.admitted = grow(nd.admitted, int(d.Key))
	nl := &nd.admitted[d.Key]
	nl.Expire(d.Now - m.window)
	if d.InOutage {
		if d.Allowed {
			m.outageAdmitted++
		} else {
			m.outageRefused++
		}
	}
	if !d.Allowed {
		ks.refused = true
		return
	}
	ks.admitted.Push(d.Now, d.Cost)
	ks.peak = max(ks.peak, ks.admitted.Sum())
	m.afterEvents.observe(d.Now, ks.admitted.Sum())
	nl.Push(d.Now, d.Cost)
	m.nodePeak = max(m.nodePeak, nl.Sum())
	if d.InOutage {
		m.outagePeak = max(m.outagePeak, ks.admitted.Sum())
		nd.duringOutage = grow(nd.duringOutage, int(d.Key))
		ol := &nd.duringOutage[d.Key]
		ol.Expire(d.Now - m.window)
		ol.Push(d.Now, d.Cost)
		m.outageNodePeak = max(m.outageNodePeak, ol.Sum())
	}
}

// Fill puts the measured figures into d; the fleet's own facts (variant, placement,
// nodes, alerts, the store's audit) are the run's to fill.
func (m *FleetMeter) Fill(d *Distributed) {
	m.afterEvents.fill(d, m.limit)
	d.StoreRoundTripsTotal = m.roundTrips
	if m.decisions > 0 {
		d.StoreRoundTrips = float64(m.roundTrips) / float64(m.decisions)
	}
	d.NodePeakWindowAdmitted = m.nodePeak
	d.OutageNodePeak = m.outageNodePeak
	d.LeasesOutstandingMax = m.leasesOutstandingMax
	d.OutageAdmitted, d.OutageRefused = m.outageAdmitted, m.outageRefused
	d.OutageOverAdmission = float64(m.outagePeak) / float64(m.limit)
	d.Crashes = m.crashes
	d.StoreTimeouts = m.timeouts
	d.BreakerOpenDecisions = m.breakerOpen

	h := &m.latency
	ms := func(v time.Duration) float64 { return float64(v) / float64(time.Millisecond) }
	if h.n > 0 {
		d.AddedLatencyMeanMS = float64(h.sum) / float64(h.n) / float64(time.Millisecond)
	}
	d.AddedLatencyMaxMS = ms(h.max)
	d.AddedLatencyP50MS = ms(h.percentile(50))
	d.AddedLatencyP99MS = ms(h.percentile(99))

	first := true
	for _, ks := range m.keys {
		d.EffectiveLimit = max(d.EffectiveLimit, ks.peak)
		if !ks.refused {
			continue
		}
		s := float64(ks.peak) / float64(m.limit)
		if first || s < d.ClientShareMin {
			d.ClientShareMin = s
		}
		d.ClientShareMax = max(d.ClientShareMax, s)
		first = false
	}
}

// histogram counts durations by value: exact percentiles in memory that grows with the
// number of distinct values, not of samples. A fleet's added latencies take a handful of
// values (no wait, one or two round trips, the store timeout), whatever the run's length.
type histogram struct {
	counts map[time.Duration]int64
	n      int64
	sum    time.Duration
	max    time.Duration
}

func (h *histogram) add(d time.Duration) {
	if h.counts == nil {
		h.counts = map[time.Duration]int64{}
	}
	h.counts[d]++
	h.n++
	h.sum += d
	h.max = max(h.max, d)
}

// percentile is the nearest-rank p-th percentile (0 < p ≤ 100): the smallest recorded
// value v such that at least ⌈p·n/100⌉ of the n values are ≤ v; 0 when nothing was
// recorded. Of 100 values of which 99 are 0, the 99th percentile is 0; of 100 of which
// 98 are 0, it is the larger value.
func (h *histogram) percentile(p int64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := (p*h.n + 99) / 100
	values := make([]time.Duration, 0, len(h.counts))
	for v := range h.counts {
		values = append(values, v)
	}
	slices.Sort(values)
	var seen int64
	for _, v := range values {
		seen += h.counts[v]
		if seen >= rank {
			return v
		}
	}
	return h.max
}
