// Package sim is rlsim's discrete-event loop on a virtual clock. Time is a time.Duration
// since the scenario's start; it moves only when an event is popped. Events due at the same
// instant run in the order they were scheduled (a sequence number breaks ties), so a run is
// a pure function of its inputs and its seed. Nothing here reads the wall clock, sleeps or
// starts a goroutine.
//
// The package also holds the two things every simulation shares: Queue, the one priority
// queue by virtual time (under Loop, the retry experiments' own loop, the traffic
// generators and the backend's release queue), and NewRNG, the one constructor of seeded
// random sources.
package sim

import "time"

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
func (l *Loop) Run(until time.Duration) {
	l.stopped = false
	for l.q.Len() > 0 && !l.stopped {
		if l.q.Min().At > until {
			l.now = until
			return
		}
		e := l.q.Pop()
		l.now = e.At
		l.fired++
		e.Value.Fire(l)
	}
}
