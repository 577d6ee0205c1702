package cluster

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/rlsim/rlsim/store"
)

// PlacementKind is one place the counters live, with everything the fleet and the runs
// ask of it. Each placement is one file of this package that registers itself
// (registerPlacement, from an init function); nothing outside that file names it, and
// cluster/contract_test.go holds every registered placement to the limiter contract.
type PlacementKind struct {
	// Name is what a scenario's placement field and Config.Placement call it.
	Name string
	// Doc is one line: where the counters live and how a node decides.
	Doc string
	// Rank orders the placements in every list, lowest first; ranks are unique.
	Rank int
	// Default makes it the placement of a Config that names none (exactly one has it).
	Default bool
	// Store reports whether the placement talks to the shared store under c; nil means
	// it always does.
	Store func(c *Config) bool
	// Isolated marks a placement whose nodes reach neither a store nor a peer: outages
	// and partitions leave its decisions as they are, and raise no alert.
	Isolated bool
	// Mechanism, when set, is the mechanism the placement imposes whatever the algorithm
	// ("lease"): what a fleet's rows name as their algorithm.
	Mechanism string
	// Runs is the algorithms of algs the placement runs under c (defaults applied), in
	// algs' order; nil runs them all.
	Runs func(c *Config, algs []string) []string
	// Validate checks the fields of c that only this placement reads; nil checks none.
	Validate func(c *Config) error
	// New builds the placement's part of fleet f, deciding on the store st (already
	// wrapped for the configured faults; nil parts of Fleet are not yet built).
	New func(f *Fleet, st store.Store) (placement, error)
	// Scripts marks a placement whose every store call is one of the store's scripts, so
	// that a store under memory pressure can refuse one (EvictionPlacements).
	Scripts bool
	// Asks marks a placement decided by the algorithm's shared script (the ticket's ask),
	// whose calls can be pipelined and checked against a store that loses nothing.
	Asks bool
	// Guarded marks a placement whose node-local guard admits a request before the store
	// is asked: a failover that fails open locally has already been through it.
	Guarded bool
	// Owners reports whether, under c, keys have owner nodes that a membership change
	// moves; nil means never.
	Owners func(c *Config) bool
}

// placement is a placement's state in one fleet: its decide step, and what the optional
// interfaces below add.
type placement interface {
	// decide fills t's decision and round trips, or sets t.ask for the fleet to ask the
	// shared script; outage is the one cutting t's node off from its link, if any.
	decide(f *Fleet, t *ticket, outage *Outage)
}

// Optional parts of a placement, each called where the fleet does that step.
type (
	// resizer follows a change of the node count, from nodes in service to to.
	resizer interface{ resize(f *Fleet, from, to int) }
	// clocked takes the clock the store decides by and how long keys must outlive it.
	clocked interface {
		setClock(clock store.Clock, keep time.Duration)
	}
	// finisher ends the run: what is still in flight lands, and its counters go in s.
	finisher interface{ finish(f *Fleet, s *Stats) }
	// figurer puts what the placement measured in d (Fleet.Designs).
	figurer interface {
		figures(f *Fleet, d *DesignFigures)
	}
	// loner says what a partition's nodes do, when the placement lets them decide alone
	// from what they knew ("" when the outage policy decides).
	loner interface{ alone() string }
	// outstander is the leased, unspent, unexpired tokens every node holds for key.
	outstander interface {
		outstanding(f *Fleet, key uint32, now int64) int64
	}
)

var placementKinds = map[string]*PlacementKind{}

// registerPlacement adds k to the placements; it panics on a second registration of a
// name, a rank or the default, which is a mistake in this package, not in any input.
func registerPlacement(k PlacementKind) {
	if k.Name == "" || k.New == nil {
		panic("cluster: a placement needs a name and a constructor")
	}
	for _, o := range placementKinds {
		switch {
		case o.Name == k.Name:
			panic("cluster: placement " + k.Name + " registered twice")
		case o.Rank == k.Rank:
			panic(fmt.Sprintf("cluster: placements %s and %s share rank %d", o.Name, k.Name, k.Rank))
		case o.Default && k.Default:
			panic("cluster: two default placements, " + o.Name + " and " + k.Name)
		}
	}
	placementKinds[k.Name] = &k
}

// PlacementKinds are the registered placements, by rank.
func PlacementKinds() []*PlacementKind {
	out := make([]*PlacementKind, 0, len(placementKinds))
	for _, k := range placementKinds {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b *PlacementKind) int { return cmp.Compare(a.Rank, b.Rank) })
	return out
}

// Placements are the placements' names, by rank: where the counters live.
func Placements() []string {
	var out []string
	for _, k := range PlacementKinds() {
		out = append(out, k.Name)
	}
	return out
}

// PlacementOf is the placement named name ("" is the default), or nil when none is.
func PlacementOf(name string) *PlacementKind {
	if name == "" {
		for _, k := range placementKinds {
			if k.Default {
				return k
			}
		}
	}
	return placementKinds[name]
}

// EvictionPlacements are the placements a store under memory pressure runs: those whose
// store calls are the scripts. Like outages, a store's faults leave the placements
// without a store (local, owner, global-sync to owners) as they are.
func EvictionPlacements() []string {
	var out []string
	for _, k := range PlacementKinds() {
		if k.Scripts {
			out = append(out, k.Name)
		}
	}
	return out
}

// Runs is the algorithms of algs that c's placement runs (c with its defaults applied),
// in algs' order: a placement with a fixed mechanism runs it once, the others the
// algorithms they have a form of; the rest are left out of that fleet's rows.
func (c *Config) Runs(algs []string) []string {
	k := PlacementOf(c.Placement)
	if k == nil || k.Runs == nil {
		return algs
	}
	return k.Runs(c, algs)
}

// MovesOwners reports whether c's keys have owner nodes that a membership change moves.
func (c *Config) MovesOwners() bool {
	k := PlacementOf(c.Placement)
	return k != nil && k.Owners != nil && k.Owners(c)
}

// keep is the algorithms of algs that supported holds, in algs' order.
func keep(algs, supported []string) []string {
	var out []string
	for _, a := range algs {
		if slices.Contains(supported, a) {
			out = append(out, a)
		}
	}
	return out
}
