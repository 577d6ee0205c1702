package cluster

import "github.com/rlsim/rlsim/store"

// The two-tier placement: a loose node-local guard per key (Config.Guard) first, then the
// exact shared script for what the guard admits; the guard refuses without a round trip.
func init() {
	registerPlacement(PlacementKind{
		Name:    "two-tier",
		Doc:     "a loose node-local guard first, then the exact shared script",
		Rank:    30,
		Runs:    scriptAlgorithms,
		New:     func(f *Fleet, st store.Store) (placement, error) { return newShared(f, st, true) },
		Scripts: true,
		Asks:    true,
		Guarded: true,
	})
}
