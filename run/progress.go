package run

import (
	"time"

	"github.com/rlsim/rlsim/scenario"
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
	// A replay, whose horizon is not known before the log is read, reports the bytes of
	// the log read so far instead (Bytes, which may be called from any goroutine) out of
	// TotalBytes (0 when not known: a pipe).
	Bytes      func() int64
	TotalBytes int64
}

// progressEvery is how many requests pass between two Progress reports.
const progressEvery = 4096

// watch returns the counter that reports one algorithm's progress to Options.Progress, or
// nil (which counts nothing) when no one is watching. Counting never changes a decision.
func (o Options) watch(sc *scenario.Scenario, algorithm string, index, count int) *progressCounter {
	if o.Progress == nil {
		return nil
	}
	return &progressCounter{report: o.Progress,
		base: Progress{Scenario: sc.Name, Algorithm: algorithm, Index: index, Count: count, Horizon: sc.Horizon()}}
}

type progressCounter struct {
	report func(Progress)
	base   Progress
}

// count records one decided request at virtual time now.
func (p *progressCounter) count(now time.Duration) {
	if p == nil {
		return
	}
	if p.base.Requests++; p.base.Requests%progressEvery == 0 {
		r := p.base
		r.Now = now
		p.report(r)
	}
}
