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
