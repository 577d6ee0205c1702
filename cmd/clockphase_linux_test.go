package cmd

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// clockPhase is where the monotonic clock's milliseconds begin within the wall clock's:
// (CLOCK_MONOTONIC − CLOCK_REALTIME) mod 1 ms. nginx decides by the one and logs the
// other, so a request falls in different milliseconds of the two when it arrives within
// this much of the end of a wall-clock millisecond. With pid set (RLSIM_NGINX_PID), it is
// that process's: its time namespace's offset of the monotonic clock added
// (/proc/PID/timens_offsets; .ci/aligned-clock sets it).
func clockPhase(pid string) (time.Duration, bool) {
	var wall, mono unix.Timespec
	if unix.ClockGettime(unix.CLOCK_REALTIME, &wall) != nil || unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono) != nil {
		return 0, false
	}
	d := (mono.Nano() - wall.Nano() + monotonicOffset(pid)) % int64(time.Millisecond)
	if d < 0 {
		d += int64(time.Millisecond)
	}
	return time.Duration(d), true
}

// monotonicOffset is the offset of the monotonic clock in the time namespace of process
// pid, in ns: 0 for none, no such process, or a kernel without time namespaces.
func monotonicOffset(pid string) int64 {
	if pid == "" {
		return 0
	}
	f, err := os.Open("/proc/" + pid + "/timens_offsets")
	if err != nil {
		return 0
	}
	defer f.Close()
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		fields := strings.Fields(lines.Text())
		if len(fields) == 3 && fields[0] == "monotonic" {
			sec, err1 := strconv.ParseInt(fields[1], 10, 64)
			ns, err2 := strconv.ParseInt(fields[2], 10, 64)
			if err1 == nil && err2 == nil {
				return sec*int64(time.Second) + ns
			}
		}
	}
	return 0
}
