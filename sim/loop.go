// Package sim is rlsim's discrete-event loop on a virtual clock. Time is a time.Duration
// since the scenario's start; it moves only when an event is popped. Events due at the same
// instant run in the order they were scheduled (a sequence number breaks ties), so a run is
// a pure function of its inputs and its seed. Nothing here reads the wall clock, sleeps or
// starts a goroutine.
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

type event struct {
	at  time.Duration
	seq uint64
	h   Handler
}

// queue is a binary min-heap of events ordered by (at, seq). It is written out for the
// event type rather than through container/heap, whose Push and Pop take an `any` and so
// allocate one boxed event per scheduled request on the hot path.
type queue []event

func (q queue) less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}

func (q *queue) push(e event) {
	*q = append(*q, e)
	h := *q
	i := len(h) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if !h.less(i, parent) {
			break
		}
		h[i], h[parent] = h[parent], h[i]
		i = parent
	}
}

func (q *queue) pop() event {
	h := *q
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h[last] = event{} // drop the handler reference so the collector can free it
	h = h[:last]
	for i := 0; ; {
		smallest, left, right := i, 2*i+1, 2*i+2
		if left < last && h.less(left, smallest) {
			smallest = left
		}
		if right < last && h.less(right, smallest) {
			smallest = right
		}
		if smallest == i {
			break
		}
		h[i], h[smallest] = h[smallest], h[i]
		i = smallest
	}
	*q = h
	return top
}

// Loop is a discrete-event simulation. The zero value is ready to use, at time 0.
type Loop struct {
	now     time.Duration
	seq     uint64
	q       queue
	stopped bool
	fired   uint64
}

// Now is the current virtual time.
func (l *Loop) Now() time.Duration { return l.now }

// Fired is the number of events run so far.
func (l *Loop) Fired() uint64 { return l.fired }

// Pending is the number of scheduled events not yet run.
func (l *Loop) Pending() int { return len(l.q) }

// At schedules h to run at time at. A time in the past runs at the current time, after
// the events already due now.
func (l *Loop) At(at time.Duration, h Handler) {
	if at < l.now {
		at = l.now
	}
	l.seq++
	l.q.push(event{at: at, seq: l.seq, h: h})
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
	for len(l.q) > 0 && !l.stopped {
		if l.q[0].at > until {
			l.now = until
			return
		}
		e := l.q.pop()
		l.now = e.at
		l.fired++
		e.h.Fire(l)
	}
}
