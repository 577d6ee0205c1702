package cluster

import (
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/store"
)

// designs are the store faults beyond the notes' (failover.go, eviction.go) and the
// shadow that counts what they cost. Fleet embeds it.
type designs struct {
	repl  *replicatedStore
	evict *evictingStore

	// shadow decides every request the shared script decides on a store that never loses
	// a write (no failover, no slot move, no eviction). Per key, what the fleet admitted
	// beyond what the shadow admitted of the same requests are the fault's free passes.
	shadow *store.Limiter
	// counterShadow is the shadow of Kong's counters (store.Counters), which the shared
	// placement decides by in place of one script.
	counterShadow *store.Counters
	admitted      []shadowCount
	oom           int64 // requests whose write the store refused for want of memory
	decided       int64 // decisions, for the figures per decision
}

// DesignFigures are what the designs measured in a run.
type DesignFigures struct {
	// PeerHops is the forwarded hops per decision (owner; global-sync deciding at sync
	// 0 through the owner); PeerMessages the peer requests per decision (owner: with
	// batching, fewer than the hops; global-sync to owners: the exchanges).
	PeerHops, PeerMessages float64
	// OwnershipMoves counts keys whose owner changed at a membership change;
	// MembershipChanges the changes.
	OwnershipMoves    int64
	MembershipChanges int
	// Syncs are the global-sync nodes' periodic exchanges with their target (one a tick
	// from a node's first request for a key to its last); SyncFailures the sends a
	// partition stopped.
	Syncs, SyncFailures int64
	// LostWrites are the writes a failover lost (its replica's lag).
	LostWrites int64
	// FreePasses are, summed over the client keys, the requests the fleet admitted beyond
	// those a store losing nothing would have admitted of the same requests (decided by
	// the shared script, shared and two-tier); FreePassKeys the keys that got any.
	FreePasses, FreePassKeys int64
	// EvictedKeys, OOMErrors, StoreKeysMax and StoreBytesMax are the store's evictions,
	// the requests whose write it refused for want of memory, and the most keys and bytes
	// (tables included) its keys held at once.
	EvictedKeys, OOMErrors int64
	StoreKeysMax           int
	StoreBytesMax          int64
	// Forward is how the owner placement forwards; Sync and SyncTo are a global-sync
	// node's exchange interval and target ("" and 0 for the other placements).
	Forward string
	Sync    time.Duration
	SyncTo  string
	// SyncsOnStore says the Syncs were round trips to the store (global sync to it), on
	// top of the decisions' own.
	SyncsOnStore bool
}

// Designs returns the designs' figures so far.
func (f *Fleet) Designs() DesignFigures {
	var d DesignFigures
	if p, ok := f.place.(figurer); ok {
		p.figures(f, &d)
	}
	if f.repl != nil {
		d.LostWrites = f.repl.lostWrites
	}
	if e := f.evict; e != nil {
		d.EvictedKeys, d.StoreKeysMax, d.StoreBytesMax = e.evicted, e.keysMax, e.usedMax
	}
	d.OOMErrors = f.oom
	for _, c := range f.admitted {
		if c.fleet > c.shadow {
			d.FreePasses += c.fleet - c.shadow
			d.FreePassKeys++
		}
	}
	return d
}

// newDesigns wraps the store for the configured faults; it returns the store the fleet
// is to use.
func (f *Fleet) newDesigns(st store.Store) (store.Store, error) {
	c := f.cfg
	if len(c.Failovers)+len(c.Reshards) > 0 && c.UsesStore() {
		f.repl = newReplicatedStore(st, c)
		st = f.repl
	}
	if c.Eviction != nil && !c.Eviction.Server && c.UsesStore() {
		var err error
		if f.evict, err = newEvictingStore(st, *c.Eviction); err != nil {
			return nil, err
		}
		st = f.evict
	}
	return st, nil
}

// newShadow builds the shadow when a fault may lose the shared script's writes (a
// failover, a slot move, eviction): it decides the same requests on a store that loses
// nothing.
func (f *Fleet) newShadow() error {
	c := f.cfg
	if !f.kind.Asks || f.repl == nil && f.evict == nil && c.Eviction == nil {
		return nil
	}
	var err error
	if f.script == nil && store.SharesCounters(f.algorithm) {
		f.counterShadow, err = store.NewCounters(store.NewModel(), f.algorithm, c.Prefix)
		return err
	}
	f.shadow, err = store.NewLimiter(store.NewModel(), f.algorithm, f.policy, c.Prefix)
	return err
}

// shadowCount is what the fleet and the shadow admitted of one key's requests.
type shadowCount struct{ fleet, shadow int64 }

// designsEnd counts t, and has the shadow decide it as well when the shared script (or
// Kong's counters) did.
func (f *Fleet) designsEnd(t *ticket) {
	f.decided++
	var r store.Reply
	var err error
	switch {
	case f.shadow != nil && t.ask:
		r, err = f.shadow.Allow(f.names[t.key], t.at(), t.cost)
	case f.counterShadow != nil && t.counted:
		r, _, err = f.counterShadow.Allow(f.names[t.key], t.at(), t.cost)
	default:
		return
	}
	if err != nil {
		return
	}
	for int(t.key) >= len(f.admitted) {
		f.admitted = append(f.admitted, shadowCount{})
	}
	c := &f.admitted[t.key]
	if t.d.Allowed {
		c.fleet += t.cost
	}
	if r.Allowed {
		c.shadow += t.cost
	}
}

// oomRefused decides t by the eviction's outage policy when err is the store's refusal
// to write for want of memory, and reports whether it was.
func (f *Fleet) oomRefused(t *ticket, err error) bool {
	if !store.IsOOM(err) || f.cfg.Eviction == nil {
		return false
	}
	f.oom++
	t.d = f.failover(&Outage{Policy: f.cfg.Eviction.OutagePolicy}, t.nd, t.key, t.nodeNow, t.cost, f.kind.Guarded)
	return true
}

// storeReply is the decision a store call answered: by the eviction's outage policy when
// the store refused its write for want of memory (oomRefused), else as fromStore.
func (f *Fleet) storeReply(t *ticket, r store.Reply, err error) algorithms.Decision {
	if f.oomRefused(t, err) {
		return t.d
	}
	return f.fromStore(r, err)
}

// outageFor returns the outage that cuts node off from link (CutStore, CutPeers) at
// elapsed, if any: a store outage (all nodes; none for a placement without a store), or a
// partition that holds the node and cuts that link.
func (f *Fleet) outageFor(node int, elapsed time.Duration, link string) (int, *Outage) {
	for i := range f.cfg.Outages {
		o := &f.cfg.Outages[i]
		if o.Nodes == 0 && !f.cfg.UsesStore() || o.Nodes > 0 && (node >= o.Nodes || o.Cut != "" && o.Cut != link) {
			continue
		}
		if elapsed >= o.At && elapsed < o.At+o.For {
			return i, o
		}
	}
	return -1, nil
}

// ownLink is the link a node's decisions depend on: the store's, or for the placements
// without one (owner, global-sync to owners) its peers'.
func (f *Fleet) ownLink() string {
	if f.cfg.UsesStore() {
		return CutStore
	}
	return CutPeers
}
