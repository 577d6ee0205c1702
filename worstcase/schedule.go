// Package worstcase finds, for one key, the arrival schedule that gets the most through a
// rate limiter inside one trailing window, and states the analytic bound where one is
// known. A user who writes "100 per minute" reads it as "never more than 100 in any
// minute"; this package measures how far each algorithm is from that promise against a
// client that picks its own timing.
//
// Every candidate schedule is judged by running the real limiter (algorithms.New) over it
// on the virtual clock and sweeping what it admitted, never by a formula: the bounds are
// printed beside what the engine measured, not instead of it.
package worstcase

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rlsim/rlsim/algorithms"
)

// Burst is Count requests of cost 1 arriving together at At, an offset from the
// schedule's start (t=0 of the scenario it is printed as).
type Burst struct {
	At    time.Duration `json:"at"`
	Count int64         `json:"count"`
}

// Schedule is one key's arrivals, in non-decreasing At. Requests at the same instant are
// decided in the order listed; they are identical, so only how many arrive matters.
type Schedule []Burst

// Requests is the number of requests in s.
func (s Schedule) Requests() int64 {
	var n int64
	for _, b := range s {
		n += b.Count
	}
	return n
}

// normalize sorts s by time, merges bursts at the same instant, drops empty ones and
// anything before t=0, and returns the result (s itself is reused).
func (s Schedule) normalize() Schedule {
	slices.SortStableFunc(s, func(a, b Burst) int { return compareDurations(a.At, b.At) })
	out := s[:0]
	for _, b := range s {
		if b.Count <= 0 || b.At < 0 {
			continue
		}
		if n := len(out); n > 0 && out[n-1].At == b.At {
			out[n-1].Count += b.Count
			continue
		}
		out = append(out, b)
	}
	return out
}

func compareDurations(a, b time.Duration) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// clone returns a copy of s that shares no memory with it.
func (s Schedule) clone() Schedule { return append(Schedule(nil), s...) }

// String renders s compactly: "100@59.999999999s 100@1m0s".
func (s Schedule) String() string {
	parts := make([]string, len(s))
	for i, b := range s {
		parts[i] = fmt.Sprintf("%d@%s", b.Count, b.At)
	}
	return strings.Join(parts, " ")
}

// Measure is what the engine measured for one schedule and one window length.
type Measure struct {
	// Peak is the most cost admitted inside any trailing window (t−T, t] of length T.
	Peak int64
	// PeakEnd is the end t of the first window holding Peak, as an offset from the start.
	PeakEnd time.Duration
	// Admitted and Requests count the schedule's admitted and offered requests.
	Admitted, Requests int64
}

// Target is what a search attacks: one algorithm under one policy, its windows aligned as
// a run starting at Epoch aligns them (fixed windows fall on multiples of the policy's
// Window on the Unix clock), measured over trailing windows of length T.
type Target struct {
	Algorithm string
	// Own, when not nil, builds the limiter in place of algorithms.New: a limiter the
	// user brings, named Algorithm. It must be comparable (a pointer), as Targets are
	// cache keys.
	Own    Maker
	Policy algorithms.Policy
	// Epoch is the Unix time of the schedule's t=0, in nanoseconds.
	Epoch int64
	// T is the length of the trailing window measured; zero means the policy's Window.
	T time.Duration
}

func (t Target) window() time.Duration {
	if t.T > 0 {
		return t.T
	}
	return t.Policy.Window
}

// Maker builds a limiter the search does not know by name (package external): each New
// starts from fresh state. A limiter it builds that has an Err method fails the search
// with that error, and one that has Close is closed after each candidate.
type Maker interface {
	New(p algorithms.Policy) (algorithms.Limiter, error)
}

// aheadLimiter is a limiter that decides requests written ahead of its answers (see
// external.Limiter): a schedule does not depend on the decisions, so admissions writes it
// ahead instead of waiting for each answer.
type aheadLimiter interface {
	Send(key uint32, now, cost int64)
	Receive() algorithms.Decision
	Ahead() int
}

// admissionsAhead is admissions for an aheadLimiter: up to Ahead requests in flight.
func admissionsAhead(lim aheadLimiter, s Schedule, epoch int64) []int64 {
	var admitted, inFlight []int64
	depth := max(lim.Ahead(), 1)
	receive := func() {
		at := inFlight[0]
		inFlight = inFlight[1:]
		if lim.Receive().Allowed {
			admitted = append(admitted, at)
		}
	}
	for _, b := range s {
		at := int64(b.At)
		for range b.Count {
			lim.Send(0, epoch+at, 1)
			if inFlight = append(inFlight, at); len(inFlight) >= depth {
				receive()
			}
		}
	}
	for len(inFlight) > 0 {
		receive()
	}
	return admitted
}

// limiter builds a fresh limiter of t's algorithm.
func (t Target) limiter() (algorithms.Limiter, error) {
	if t.Own != nil {
		return t.Own.New(t.Policy)
	}
	return algorithms.New(t.Algorithm, t.Policy)
}

// admissions runs the real limiter over s and returns the offsets of the admitted
// requests (cost 1 each), in order.
func (t Target) admissions(s Schedule) ([]int64, error) {
	lim, err := t.limiter()
	if err != nil {
		return nil, err
	}
	var admitted []int64
	if a, ok := lim.(aheadLimiter); ok {
		admitted = admissionsAhead(a, s, t.Epoch)
	} else {
		for _, b := range s {
			at := int64(b.At)
			for range b.Count {
				if lim.Allow(0, t.Epoch+at, 1).Allowed {
					admitted = append(admitted, at)
				}
			}
		}
	}
	if err := algorithms.Finish(lim); err != nil {
		return nil, err
	}
	return admitted, nil
}

// Measure runs the real limiter over s (which must be in non-decreasing At) and sweeps
// its admissions for the most admitted inside any trailing window of length T.
func (t Target) Measure(s Schedule) (Measure, error) {
	admitted, err := t.admissions(s)
	if err != nil {
		return Measure{}, err
	}
	peak, end := peakWindow(admitted, int64(t.window()))
	return Measure{Peak: peak, PeakEnd: time.Duration(end), Admitted: int64(len(admitted)), Requests: s.Requests()}, nil
}

// peakWindow returns the most entries of times (sorted, one unit each) inside any window
// (t−w, t], and the first t at which it is reached. A window holding the most always ends
// on an entry, so the sweep checks only those ends: two pointers, linear time. This is
// the measure of report.Collector, which expires entries at t−W inclusive.
func peakWindow(times []int64, w int64) (peak, end int64) {
	lo := 0
	for hi, t := range times {
		for times[lo] <= t-w {
			lo++
		}
		if n := int64(hi - lo + 1); n > peak {
			peak, end = n, t
		}
	}
	return peak, end
}
