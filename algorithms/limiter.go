// Package algorithms holds the rate limiters rlsim compares. Every limiter is pure: the
// caller passes the virtual time and the cost of each request, nothing reads a clock, and
// nothing locks. Keys are small integers assigned by the caller (intern strings with a map
// before calling); per-key state lives in flat slices indexed by key, so memory grows with
// the number of keys and never with the number of requests.
//
// All limiters are configured from one advertised policy, "Limit units per Window", plus a
// Burst for the bucket-type algorithms. The mapping is:
//
//	fixed-window    a counter per window aligned to multiples of Window on the Unix clock
//	sliding-log     every admitted (time, cost) in the trailing Window; exact
//	sliding-window  two counters: prev·(1−elapsed/Window) + curr, the estimate of the notes
//	token-bucket    capacity Burst, refill Limit/Window per second, lazy refill, starts full
//	leaky-bucket    a queue drained at Limit/Window, bounded by Burst; reports its delay
//	gcra            generic cell rate algorithm, emission interval Window/Limit, tolerance Burst
//
// Time need not be ordered. Network hops reorder requests and nodes' clocks are skewed, so
// a limiter may be told a now earlier than one its key's state has already seen. Then no
// limiter credits the same stretch of time twice: no second refill, no window reset, no
// entry leaving the window because of a step back. Each algorithm's doc comment states its
// rule; in short, the token bucket and the sliding log decide such a request at the key's
// latest admission, the two window counters count it in the key's latest window, and GCRA
// and the leaky bucket judge it at its own, early, now against a schedule that never moves
// back. On non-decreasing now every limiter decides as if these rules did not exist.
// When stamps are at most D away from true time and requests are delivered in true order
// (bounded reordering, or per-node clock skew of up to D), each limiter admits in any
// window of length W no more than its ordered bound over W + 2D (docs/worstcase.md and
// TestReorderedAdmissionsStayWithinBound).
//
// Variants, built by name but in no default list: the design notes' own code, to show
// what it does beside the algorithms above (see NotesSlidingWindow, NotesTokenBucket):
//
//	notes-sliding-window  the notes' two-counter script: refuse when estimate >= Limit, count 1
//	notes-token-bucket    the notes' consume: float tokens, retry after whole seconds
package algorithms

import (
	"fmt"
	"io"
	"math"
	"time"
)

// Never is the RetryAfter of a request that can never pass (its cost exceeds what the
// limiter can ever hold).
const Never = time.Duration(math.MaxInt64)

// MaxUnits is the largest Limit and Burst a policy may hold: 2^52 =
// 4,503,599,627,370,496 units. Below it every limiter counts exactly: a count and a cost
// each at most MaxUnits sum to at most 2^53, which int64 holds with room to spare and
// float64 (the token bucket's tokens, the sliding window's estimate) holds exactly, so no
// sum wraps and no comparison rounds.
const MaxUnits = 1 << 52

// Policy is the advertised limit: Limit units in any Window. Burst is the capacity of the
// bucket-type algorithms (token-bucket, leaky-bucket, gcra); zero means Burst = Limit.
// Limit and Burst are at most MaxUnits.
type Policy struct {
	Limit  int64
	Window time.Duration
	Burst  int64
}

// EffectiveBurst returns Burst, or Limit when Burst is zero.
func (p Policy) EffectiveBurst() int64 {
	if p.Burst > 0 {
		return p.Burst
	}
	return p.Limit
}

// Validate reports a policy no limiter can be built from.
func (p Policy) Validate() error {
	switch {
	case p.Limit <= 0:
		return fmt.Errorf("limit must be positive, got %d", p.Limit)
	case p.Limit > MaxUnits:
		return fmt.Errorf("limit must be at most %d (2^52), got %d", int64(MaxUnits), p.Limit)
	case p.Window <= 0:
		return fmt.Errorf("window must be positive, got %s", p.Window)
	case p.Burst < 0:
		return fmt.Errorf("burst must not be negative, got %d", p.Burst)
	case p.Burst > MaxUnits:
		return fmt.Errorf("burst must be at most %d (2^52), got %d", int64(MaxUnits), p.Burst)
	}
	return nil
}

// String renders the policy as "100/1m0s burst 100".
func (p Policy) String() string {
	return fmt.Sprintf("%d/%s burst %d", p.Limit, p.Window, p.EffectiveBurst())
}

// Decision is a limiter's answer for one request.
type Decision struct {
	// Allowed reports whether the request was admitted.
	Allowed bool
	// Remaining is the cost that could still be admitted right after this decision
	// (rounded down to whole units, never negative).
	Remaining int64
	// RetryAfter is the time until a request of the same cost could pass; zero when
	// Allowed, Never when the cost can never pass.
	RetryAfter time.Duration
	// Reset is the time until the limit has fully recovered (an idle key's state).
	Reset time.Duration
	// Delay is the queueing delay the limiter adds to an admitted request before the
	// backend sees it; only the leaky bucket queues.
	Delay time.Duration
}

// Limiter decides requests for many keys.
type Limiter interface {
	// Name is the algorithm's name as used on the command line ("token-bucket").
	Name() string
	// Allow decides a request of the given cost (≥ 1) for key at now, in nanoseconds
	// since the Unix epoch on the virtual clock. Calls may come in any order of now: a now
	// earlier than what the key's state has seen never credits the same interval twice (no
	// second refill, no window reset, no expiry from a backwards step), by the rule the
	// algorithm documents. RetryAfter, Reset and Delay count from now, whatever the key's
	// state has seen, and are never negative.
	Allow(key uint32, now int64, cost int64) Decision
	// Keys is the number of keys the limiter holds state for.
	Keys() int
	// StateBytes is the exact number of bytes of per-key state the limiter holds, summed
	// over keys, counted from its own representation; -1 when its state is not in this
	// process to count (a user's script on a store, a child program).
	StateBytes() int64
}

// Admitter is implemented by limiters that can decide a request without working out what
// the decision would tell the client. Admit applies the same rule and changes the key's
// state exactly as Allow does, and returns Allow's Allowed and Delay; it leaves out
// Remaining, RetryAfter and Reset, which take most of a decision's arithmetic (the token
// bucket's exact Reset re-runs its admission rule). A caller that reads only whether a
// request passed, and how long it queued, calls Admit; one that answers a client (headers,
// a client honouring Retry-After) calls Allow. The two may be mixed on one limiter.
type Admitter interface {
	Admit(key uint32, now int64, cost int64) (allowed bool, delay time.Duration)
}

// AdmitterOf returns lim's Admit, or Allow's Allowed and Delay for a limiter that has no
// cheaper path.
func AdmitterOf(lim Limiter) Admitter {
	if a, ok := lim.(Admitter); ok {
		return a
	}
	return allowAdmitter{lim}
}

type allowAdmitter struct{ lim Limiter }

func (a allowAdmitter) Admit(key uint32, now int64, cost int64) (bool, time.Duration) {
	d := a.lim.Allow(key, now, cost)
	return d.Allowed, d.Delay
}

// Finish ends a limiter that holds something outside the process, such as a user's script
// on a store or a child program: it closes lim when lim is an io.Closer and returns the
// first of the error lim met while deciding (an Err method) and the closing's. A built-in
// holds nothing, and gives nil.
func Finish(lim Limiter) error {
	var err error
	if e, ok := lim.(interface{ Err() error }); ok {
		err = e.Err()
	}
	if c, ok := lim.(io.Closer); ok {
		if cerr := c.Close(); err == nil {
			err = cerr
		}
	}
	return err
}
