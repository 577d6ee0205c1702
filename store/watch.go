package store

import (
	"sync/atomic"
	"time"
)

// Options are how a Redis face talks to its server.
type Options struct {
	// Timeout bounds every round trip, connecting included: a server that sends no reply
	// within it fails the round trip with ErrTimeout. 0 means DefaultTimeout.
	Timeout time.Duration
	// Watch, when not nil, follows the face's round trips (see Watch).
	Watch *Watch
}

// timeout is o's round-trip deadline.
func (o Options) timeout() time.Duration {
	if o.Timeout > 0 {
		return o.Timeout
	}
	return DefaultTimeout
}

// Watch follows the round trips of the faces that share it, for a command that tells a
// slow store from a dead one while a run waits: it counts the round trips on their way
// and the replies that came back. It reads no clock; the command polls State with its
// own and reports a store that has sent nothing for a while. It is safe for concurrent
// use (a face's lanes travel at once).
type Watch struct {
	inFlight, replies atomic.Int64
	addr              atomic.Pointer[string]
}

// State is how many round trips are on their way, and how many have ended so far (with a
// reply or an error): while some are on their way and the second stays put, the store is
// silent.
func (w *Watch) State() (inFlight, ended int64) {
	if w == nil {
		return 0, 0
	}
	return w.inFlight.Load(), w.replies.Load()
}

// Addr is the address of the last server a face of this watch connected to ("" before).
func (w *Watch) Addr() string {
	if w == nil {
		return ""
	}
	if a := w.addr.Load(); a != nil {
		return *a
	}
	return ""
}

// Begin counts a round trip on its way; the function it returns counts it ended (once,
// however often it is called). A nil Watch counts nothing.
func (w *Watch) Begin() func() {
	if w == nil {
		return func() {}
	}
	w.inFlight.Add(1)
	var once atomic.Bool
	return func() {
		if once.CompareAndSwap(false, true) {
			w.replies.Add(1)
			w.inFlight.Add(-1)
		}
	}
}

func (w *Watch) connected(addr string) {
	if w != nil {
		w.addr.Store(&addr)
	}
}
