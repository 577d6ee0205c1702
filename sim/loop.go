// Package sim is rlsim's discrete-event loop on a virtual clock. Time is a time.Duration
// since the scenario's start; it moves only when an event is popped. Events due at the same
// instant run in the order they were scheduled (a sequence number breaks ties), so a run is
// a pure function of its inputs and its seed. Nothing here reads the wall clock, sleeps or
// starts a goroutine.
//
// The package also holds the two things every simulation shares: Queue, the one priority
// queue by virtual time (under Loop, the traffic generators and the backend's release
// queue), and NewRNG, the one constructor of seeded random sources. Tournament is the
// queue of a simulation whose every actor has exactly one event pending (the occ retry
// experiment's clients), where a loser tree is cheaper than a heap.
package sim

import (
	"context"
	"time"
)

// Handler is an event's action. It runs at the event's time and may schedule more events.
type Handler interface {
	Fire(l *Loop)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(l *Loop)

// Fire calls f(l).
func (f HandlerFunc) Fire(l *Loop) { f(l) }

// Loop is a discrete-event simulation. The zero value is ready to use, at time 0.
type Loop struct {
	now     time.Duration
	seq     uint64
	q       Queue[Handler]
	stopped bool
	fired   uint64
}

// Now is the current virtual time.
func (l *Loop) Now() time.Duration { return l.now }

// Fired is the number of events run so far.
func (l *Loop) Fired() uint64 { return l.fired }

// Pending is the number of scheduled events not yet run.
func (l *Loop) Pending() int { return l.q.Len() }

// At schedules h to run at time at. A time in the past runs at the current time, after
// the events already due now.
func (l *Loop) At(at time.Duration, h Handler) {
	if at < l.now {
		at = l.now
	}
	l.seq++
	l.q.Push(Item[Handler]{At: at, Seq: l.seq, Value: h})
}

// After schedules h to run d after the current time.
func (l *Loop) After(d time.Duration, h Handler) { l.At(l.now+d, h) }

// Stop makes Run return after the current event.
func (l *Loop) Stop() { l.stopped = true }

// Run pops and runs events in (time, scheduling order) until none is left, Stop is
// called, or the next event is due after until. Events after until stay queued and the
// clock is left at the last event run (or at until, if that is later and events remain).
func (l *Loop) Run(until time.Duration) { l.run(nil, until) }

// RunContext is Run that also returns, between two events, once ctx is done, with ctx's
// cause; the events not run stay queued. It looks at ctx every cancelCheck events, so a
// run a user stopped ends within microseconds at no cost to one that goes on.
func (l *Loop) RunContext(ctx context.Context, until time.Duration) error {
	return l.run(ctx, until)
}

// cancelCheck is how many events RunContext runs between two looks at its context.
const cancelCheck = 1 << 12

func (l *Loop) run(ctx context.Context, until time.Duration) error {
	var done <-chan struct{}
	if ctx != nil {
		done = ctx.Done()
	}
	l.stopped = false
	for l.q.Len() > 0 && !l.stopped {
		if done != nil && l.fired%cancelCheck == 0 {
			select {
			case <-done:
				return context.Cause(ctx)
			default:
			}
		}
		if l.q.Min().At > until {
			l.now = until
			return nil
		}
		e := l.q.Pop()
		l.now = e.At
		l.fired++
		e.Value.Fire(l)
	}
	return nil
}
