package cluster

import (
	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/store"
)

// Pipelines reports whether the fleet's store calls can be sent in batches: whether no
// step of a later decision looks at an earlier decision's reply. It holds for shared and
// two-tier: routing, scaling, outages and the node-local guards (two-tier, fail-open-local)
// move on their own, whatever the store answers. It does not hold for leased (a grant
// decides whether the node asks again) nor for shared-nonatomic (the INCR's reply decides
// whether a PEXPIRE follows), nor for local, which has no store to batch for.
// Nor does it hold under memory pressure, where the store may refuse one call of a batch.
func (f *Fleet) Pipelines() bool {
	return (f.cfg.Placement == "shared" || f.cfg.Placement == "two-tier") && f.cfg.Eviction == nil
}

// Defer takes a request's decision up to the shared script and holds it until Flush,
// its script call queued for the batch. On a fleet that does not pipeline it decides at
// once and holds only the result, so Defer and Flush work on every fleet.
func (f *Fleet) Defer(key uint32, now, cost int64) {
	if !f.Pipelines() {
		f.held = append(f.held, held{d: f.Allow(key, now, cost), decided: true})
		return
	}
	t := f.begin(key, now, cost)
	h := held{t: t, call: -1}
	if t.ask {
		h.call = len(f.calls)
		f.calls = append(f.calls, f.shared.Call(f.names[key], t.at(), t.cost))
	}
	f.held = append(f.held, h)
}

// Held is the number of decisions Defer holds.
func (f *Fleet) Held() int { return len(f.held) }

// Flush sends the held script calls to the store in one batch and finishes the held
// decisions in the order Defer took them, handing each to done. A store error refuses the
// batch and ends the run, as one failed call does (see Err).
func (f *Fleet) Flush(done func(algorithms.Decision)) {
	var replies [][]int64
	if len(f.calls) > 0 && f.err == nil {
		var err error
		replies, err = store.EvalBatch(f.st, f.calls)
		f.fail(err)
	}
	for _, h := range f.held {
		if h.decided {
			done(h.d)
			continue
		}
		if h.call >= 0 && f.err == nil {
			h.t.d = f.fromStore(store.ReplyOf(f.calls[h.call].Script, replies[h.call]))
		}
		done(f.end(h.t))
	}
	clear(f.held) // drop the pointers the tickets hold
	f.held = f.held[:0]
	clear(f.calls)
	f.calls = f.calls[:0]
}

// held is a decision Defer holds: a ticket waiting for its reply (call indexes the batch,
// -1 when the store is not asked), or a decision already taken.
type held struct {
	t       ticket
	call    int
	d       algorithms.Decision
	decided bool
}
