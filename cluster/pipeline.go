package cluster

import (
	"slices"

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
	return f.kind.Asks && f.cfg.Eviction == nil
}

// Defer takes a request's decision up to the shared script and holds it until Flush,
// its script call queued for the batch. On a fleet that does not pipeline it decides at
// once and holds only the result, so Defer and Flush work on every fleet.
func (f *Fleet) Defer(key uint32, now, cost int64) {
	if !f.Pipelines() {
		f.held = append(f.held, held{d: f.Allow(key, now, cost), decided: true})
		return
	}
	// The ticket is made in place: nothing begin calls holds or adds decisions.
	f.held = append(f.held, held{call: -1})
	h := &f.held[len(f.held)-1]
	f.begin(&h.t, key, now, cost)
	if h.t.ask {
		h.call = len(f.calls)
		f.calls = append(f.calls, f.script.Call(f.names[key], h.t.at(), h.t.cost))
	}
}

// Held is the number of decisions Defer holds.
func (f *Fleet) Held() int { return len(f.held) }

// Flush sends the held script calls to the store in one batch and finishes the held
// decisions in the order Defer took them, handing each to done, after the decisions of
// every batch Send sent before them. A store error refuses the batch and ends the run, as
// one failed call does (see Err).
func (f *Fleet) Flush(done func(algorithms.Decision)) {
	f.Send()
	for len(f.out) > 0 {
		f.Receive(done)
	}
}

// Send puts the held decisions' script calls on their way to the store, after those of
// the batches sent before, and starts a new batch for Defer: the store works through the
// batch while the caller makes the next (Defer) and finishes the last (Receive). A later
// decision's first half (Defer) runs before an earlier one's second half (Receive), which
// changes nothing: the steps after the script's reply (the shadow, the observer) are never
// looked at by the steps before it. Once the store has failed, nothing more is sent.
func (f *Fleet) Send() {
	b := sent{held: f.held, calls: f.calls}
	if len(f.calls) > 0 && f.err == nil {
		if f.stream == nil {
			f.stream = store.NewStream(f.st)
		}
		b.pending = f.stream.Send(f.calls)
	}
	f.out = append(f.out, b)
	f.held, f.calls = nil, nil
	if n := len(f.spare); n > 0 {
		f.held, f.calls = f.spare[n-1].held, f.spare[n-1].calls
		f.spare = f.spare[:n-1]
	}
}

// Out is the number of batches Send has sent whose decisions Receive has not finished.
func (f *Fleet) Out() int { return len(f.out) }

// Receive waits for the replies of the oldest batch Send sent and finishes its decisions
// in the order Defer took them, handing each to done. A store error refuses the batch and
// ends the run, as one failed call does (see Err); the batches sent after it are refused
// too, whatever the store answered them.
func (f *Fleet) Receive(done func(algorithms.Decision)) {
	b := f.out[0]
	f.out = slices.Delete(f.out, 0, 1)
	var replies [][]int64
	if b.pending != nil {
		var err error
		replies, err = b.pending.Wait()
		f.fail(err)
	}
	for _, h := range b.held {
		if h.decided {
			done(h.d)
			continue
		}
		if h.call >= 0 && f.err == nil {
			h.t.d = f.fromStore(store.ReplyOf(b.calls[h.call].Script, replies[h.call]))
		}
		done(f.end(h.t))
	}
	f.recycle(b)
}

// Drop waits for every batch on its way to the store and forgets the decisions it and
// Defer hold, for a run that stops (cancelled, or after a store error): no call of the
// fleet is left on its way.
func (f *Fleet) Drop() {
	for _, b := range f.out {
		if b.pending != nil {
			b.pending.Wait()
		}
		f.recycle(b)
	}
	f.out = f.out[:0]
	f.recycle(sent{held: f.held, calls: f.calls})
	f.held, f.calls = nil, nil
}

// recycle keeps b's buffers for a later batch, emptied of the pointers they held.
func (f *Fleet) recycle(b sent) {
	clear(b.held)
	clear(b.calls)
	if cap(b.held) > 0 {
		f.spare = append(f.spare, sent{held: b.held[:0], calls: b.calls[:0]})
	}
}

// held is a decision Defer holds: a ticket waiting for its reply (call indexes the batch,
// -1 when the store is not asked), or a decision already taken.
type held struct {
	t       ticket
	call    int
	d       algorithms.Decision
	decided bool
}

// sent is a batch of held decisions Send sent, and its calls on their way (pending: nil
// when none was sent).
type sent struct {
	held    []held
	calls   []store.Call
	pending *store.Pending
}

// batches is what a pipelining fleet keeps of its batches, kept apart from its fields in
// fleet.go.
type batches struct {
	held   []held       // decisions Defer holds for the next batch
	calls  []store.Call // their script calls
	out    []sent       // batches sent, oldest first
	spare  []sent       // emptied buffers for later batches
	stream *store.Stream
}
