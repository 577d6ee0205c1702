package cluster

import "time"

// Observation is what one decision did, as whoever measures the fleet needs it: the
// fleet decides and does not measure. report.FleetDecision has the same fields, so a run
// hands one to report.FleetMeter by a conversion, without a copy.
type Observation struct {
	// Key, Now (ns since the Unix epoch, the true virtual time) and Cost are the
	// request's; Node is the index of the node that decided it, in the order nodes
	// were started.
	Key       uint32
	Node      int
	Now, Cost int64
	Allowed   bool
	// InOutage says the store was down (a scripted outage) and the placement uses it.
	InOutage bool
	// RoundTrips are the store round trips the decision made; Added is what it waited
	// for the store: its round trips' latency, plus the client's timeout when it called
	// a store that was down.
	RoundTrips int
	Added      time.Duration
	// TimedOut says the decision waited out the store client's timeout; BreakerOpen that
	// the node's open breaker sent it to the outage policy without calling the store;
	// Crashed that the process died between INCR and EXPIRE.
	TimedOut, BreakerOpen, Crashed bool
	// LeasesOutstanding is, for the leased placement, the tokens all nodes hold for the
	// key after the decision, unspent and unexpired; zero for the others.
	LeasesOutstanding int64
}

// Observe has fn told of every decision from now on, in the order the decisions are
// finished (Allow, or Flush for held ones); nil stops it. The Observation is reused:
// fn must not keep it.
func (f *Fleet) Observe(fn func(*Observation)) { f.observe = fn }

// Stats are what a fleet knows of its own run when it finishes.
type Stats struct {
	// NodesMax is the most nodes the fleet had in service.
	NodesMax int
	// Alerts counts the outage alerts the fleet raised; Alert is the first one's text.
	Alerts int
	Alert  string
	// BreakerOpens counts how many times the nodes' circuit breakers opened.
	BreakerOpens int64
	// StaleReads and LostWrites are the shared-racy placement's (see racy.go).
	StaleReads, LostWrites int64
	// GuardLimit is the node-local guard's limit per key when one is in play (two-tier,
	// fail-open-local), else zero.
	GuardLimit int64
	// Store is the store's face when the placement uses one ("model", "miniredis",
	// "redis"), else "".
	Store string
	// BlockedForever, LeakedKeys and LeakedBytes are the keys the run left on the store
	// without a TTL (store.Audit): those that refuse their client for good, the others,
	// and the others' Redis memory (MEMORY USAGE on a real server, else store.CounterBytes).
	BlockedForever, LeakedKeys, LeakedBytes int64
}
