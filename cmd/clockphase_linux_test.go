package cmd

import (
	"time"

	"golang.org/x/sys/unix"
)

// clockPhase is where the monotonic clock's milliseconds begin within the wall clock's:
// (CLOCK_MONOTONIC − CLOCK_REALTIME) mod 1 ms. nginx decides by the one and logs the
// other, so a request falls in different milliseconds of the two when it arrives within
// this much of the end of a wall-clock millisecond.
func clockPhase() (time.Duration, bool) {
	var wall, mono unix.Timespec
	if unix.ClockGettime(unix.CLOCK_REALTIME, &wall) != nil || unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono) != nil {
		return 0, false
	}
	d := (mono.Nano() - wall.Nano()) % int64(time.Millisecond)
	if d < 0 {
		d += int64(time.Millisecond)
	}
	return time.Duration(d), true
}
