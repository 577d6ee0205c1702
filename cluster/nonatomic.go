package cluster

import (
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/store"
)

// The shared-nonatomic placement: a fixed-window counter kept by INCR, then EXPIRE as a
// second command, which a crash between the two can skip (Config.CrashProbability),
// leaving a key with no TTL. Whatever the algorithm asked, the counter decides: the
// fleet's rows name its mechanism, incr-expire.
func init() {
	registerPlacement(PlacementKind{
		Name:      "shared-nonatomic",
		Doc:       "INCR, then EXPIRE as a second command that a crash can skip",
		Rank:      50,
		Mechanism: "incr-expire",
		Runs:      func(*Config, []string) []string { return []string{algorithms.FixedWindowName} },
		New: func(f *Fleet, st store.Store) (placement, error) {
			na, err := store.NewNonAtomic(st, f.policy, f.cfg.Prefix, f.cfg.TTLWindowKey)
			return &nonAtomic{na: na}, err
		},
		Scripts: true,
	})
}

type nonAtomic struct{ na *store.NonAtomic }

var _ clocked = (*nonAtomic)(nil)

func (p *nonAtomic) decide(f *Fleet, t *ticket, outage *Outage) {
	if o := f.reach(t, outage); o != nil {
		t.d = f.failover(o, t.nd, t.key, t.nodeNow, t.cost, false)
		return
	}
	crash := f.cfg.CrashProbability > 0 && f.rng.Float64() < f.cfg.CrashProbability
	r, err := p.na.Allow(f.names[t.key], t.at(), t.cost, crash)
	t.trips = r.RoundTrips
	t.crashed = r.Crashed
	t.d = f.storeReply(t, r.Reply, err)
}

func (p *nonAtomic) setClock(clock store.Clock, keep time.Duration) {
	p.na.SetClock(clock)
	p.na.SetKeep(keep)
}
