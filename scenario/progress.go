package scenario

import (
	"time"

	"github.com/rlsim/rlsim/algorithms"
)

// Progress is how far a run has come, in virtual time. Options.Progress receives one every
// progressEvery requests of each algorithm.
type Progress struct {
	Scenario, Algorithm string
	// Index is the algorithm's place (0-based) among Count algorithms run one after another.
	Index, Count int
	// Now is the virtual time reached, out of Horizon.
	Now, Horizon time.Duration
	// Requests is how many requests this algorithm has decided so far.
	Requests int64
}

// progressEvery is how many requests pass between two Progress reports.
const progressEvery = 4096

// watch wraps lim so that its decisions are counted for Options.Progress; with no Progress
// it returns lim itself. The wrapper only counts: decisions pass through unchanged.
func (o Options) watch(sc *Scenario, lim algorithms.Limiter, index, count int) algorithms.Limiter {
	if o.Progress == nil {
		return lim
	}
	return &progressLimiter{Limiter: lim, report: o.Progress, epoch: sc.EpochTime().UnixNano(),
		base: Progress{Scenario: sc.Name, Algorithm: lim.Name(), Index: index, Count: count, Horizon: sc.Horizon()}}
}

type progressLimiter struct {
	algorithms.Limiter
	report func(Progress)
	epoch  int64
	base   Progress
}

func (p *progressLimiter) Allow(key uint32, now int64, cost int64) algorithms.Decision {
	if p.base.Requests++; p.base.Requests%progressEvery == 0 {
		r := p.base
		r.Now = time.Duration(now - p.epoch)
		p.report(r)
	}
	return p.Limiter.Allow(key, now, cost)
}
