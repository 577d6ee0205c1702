package report

import "time"

// FleetEvent is something a fleet went through during a run: a store outage from At for
// For (For > 0) under an outage policy, or a change to Nodes nodes at At (Nodes > 0); or,
// with a Label, whatever the label says (a partition, a failover, a slot move).
type FleetEvent struct {
	At, For time.Duration
	Nodes   int
	Policy  string
	Label   string
}

// MaxIdenticalNoted is how many variants a fleet chart's caption names series that
// coincide in, before it counts the rest.
const MaxIdenticalNoted = 2

// ResultName names a result in charts and per-row files: the algorithm, and for a fleet
// run "<algorithm>@<variant>", as the decisions file does, so variants stay apart.
func ResultName(x Result) string {
	if x.Distributed != nil && x.Distributed.Variant != "" {
		return x.Algorithm + "@" + x.Distributed.Variant
	}
	return x.Algorithm
}
