package sim

import (
	"fmt"
	"math"
	"time"
)

// The virtual clock counts int64 nanoseconds: from the start of a run on the loop, and
// from the Unix epoch where a run is placed on the wall clock (a fixed window aligns to
// multiples of W in Unix time, as a Redis key named floor(unix/W) does; a log keeps its
// own dates). These bounds keep every such number, and what the algorithms and the
// worst-case search add to it, inside int64; the checks below are the one place that
// says so, for scenario files, flags, logs and the worst-case search alike. Their errors
// say what is wrong; callers say where (file:line:col, flag, log line).

// MaxWindow is the longest window rlsim simulates: 100000h, about 11.4 years. The
// worst-case search plays attacks up to WindowReach windows around a window, and every
// algorithm works on whole windows in int64 nanoseconds; longer windows would overflow.
const MaxWindow = 100_000 * time.Hour

// WindowReach is how many windows before a run's start and after its end the algorithms
// and the worst-case search may place a time (a window boundary, an attack, a refill).
const WindowReach = 5

// EarliestTime and LatestTime bound the wall-clock times a run can be placed at: int64
// nanoseconds of Unix time reach from 1677-09-21 to 2262-04-11; the whole years inside.
var (
	EarliestTime = time.Date(1678, 1, 1, 0, 0, 0, 0, time.UTC)
	LatestTime   = time.Date(2262, 1, 1, 0, 0, 0, 0, time.UTC)
)

// CheckWindow reports a window that is not positive or is longer than MaxWindow.
func CheckWindow(w time.Duration) error {
	switch {
	case w <= 0:
		return fmt.Errorf("must be positive, got %s", w)
	case w > MaxWindow:
		return fmt.Errorf("%s is longer than the longest window the virtual clock handles, %s (about 11 years)", w, MaxWindow)
	}
	return nil
}

// CheckTime reports a wall-clock time outside [EarliestTime, LatestTime): the virtual
// clock, int64 nanoseconds of Unix time, cannot place it.
func CheckTime(t time.Time) error {
	if t.Before(EarliestTime) || !t.Before(LatestTime) {
		return fmt.Errorf("%s is outside the years the virtual clock counts (%d to %d: int64 nanoseconds of Unix time)",
			t.Format(time.RFC3339Nano), EarliestTime.Year(), LatestTime.Year()-1)
	}
	return nil
}

// CheckSpan reports the span from first to last (first ≤ last) when the clock cannot
// run it: either end outside the years it counts, or more than an int64 of nanoseconds
// (about 292 years) between them.
func CheckSpan(first, last time.Time) error {
	if err := CheckTime(first); err != nil {
		return err
	}
	if err := CheckTime(last); err != nil {
		return err
	}
	if d := last.Sub(first); d == time.Duration(math.MaxInt64) || d == time.Duration(math.MinInt64) {
		return fmt.Errorf("%s to %s is more than the %s the virtual clock runs (about 292 years)",
			first.Format(time.RFC3339Nano), last.Format(time.RFC3339Nano), time.Duration(math.MaxInt64))
	}
	return nil
}

// CheckRun reports a run the clock cannot place: one starting at epoch and lasting span,
// with windows of w, must keep WindowReach windows before its start and after its end
// inside the years the clock counts.
func CheckRun(epoch time.Time, span, w time.Duration) error {
	if err := CheckTime(epoch); err != nil {
		return err
	}
	if err := CheckWindow(w); err != nil {
		return fmt.Errorf("window %w", err)
	}
	reach := time.Duration(WindowReach) * w
	if span < 0 || span > time.Duration(math.MaxInt64)-reach {
		return fmt.Errorf("a run of %s with windows of %s is longer than the virtual clock runs", span, w)
	}
	if epoch.Add(-reach).Before(EarliestTime) {
		return fmt.Errorf("starting at %s, %d windows of %s before it fall before %d, the first year the virtual clock counts",
			epoch.Format(time.RFC3339), WindowReach, w, EarliestTime.Year())
	}
	if end := epoch.Add(span).Add(reach); !end.Before(LatestTime) || end.Before(epoch) {
		return fmt.Errorf("starting at %s, %s and %d windows of %s after it reach past %d, the last year the virtual clock counts",
			epoch.Format(time.RFC3339), span, WindowReach, w, LatestTime.Year()-1)
	}
	return nil
}
