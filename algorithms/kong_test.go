package algorithms

import (
	"strings"
	"testing"
	"time"
)

// TestKongTimeline: the reference's hand case (second=1 minute=3 at 12:00:00.0, .5, 01, 02,
// 03: A R A A R with policy=local, A R A R R with policy=redis, where the refused request
// still counts on the minute), and the next minute starting from zero.
func TestKongTimeline(t *testing.T) {
	noon := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC).UnixNano() - epoch
	at := func(sec float64) time.Duration { return time.Duration(noon) + time.Duration(sec*float64(time.Second)) }
	t.Run("local", func(t *testing.T) {
		runTimeline(t, mustNew(t, "kong:second=1 minute=3"), []step{
			{at: at(0), want: allowed(0, time.Minute)},
			{at: at(0.5), want: refused(0, 500*ms, 59500*ms)}, // the second refuses; not counted
			{at: at(1), want: allowed(0, 59*time.Second)},
			{at: at(2), want: allowed(0, 58*time.Second)},
			{at: at(3), want: refused(0, 57*time.Second, 57*time.Second)}, // the minute's three are spent
			{at: at(60), want: allowed(0, time.Minute)},
		})
	})
	t.Run("redis", func(t *testing.T) {
		runTimeline(t, mustNew(t, "kong:second=1 minute=3 policy=redis"), []step{
			{at: at(0), want: allowed(0, time.Minute)},
			{at: at(0.5), want: refused(0, 500*ms, 59500*ms)}, // counted: the minute holds 2 (a retry at 01 makes 3)
			{at: at(1), want: allowed(0, 59*time.Second)},
			{at: at(2), want: refused(0, 58*time.Second, 58*time.Second)},
			{at: at(3), want: refused(0, 57*time.Second, 57*time.Second)},
			{at: at(60), want: allowed(0, time.Minute)},
		})
	})
	t.Run("the edge of a second", func(t *testing.T) {
		runTimeline(t, mustNew(t, "kong:second=10 minute=15"), []step{
			{at: at(59.9), n: 11, admit: 10},
			{at: at(60), n: 11, admit: 10}, // a new second and a new minute: 20 within 100 ms
			{at: at(61), n: 11, admit: 5},  // the minute caps the seconds
		})
	})
	t.Run("a month's counter lives 30 days", func(t *testing.T) {
		// January has 31 days: the counter made on the 1st expires on the 31st, and the
		// count starts over a day before February's.
		jan1 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano() - epoch
		day := 24 * time.Hour
		runTimeline(t, mustNew(t, "kong:month=2"), []step{
			{at: time.Duration(jan1), n: 3, admit: 2},
			{at: time.Duration(jan1) + 30*day - 1, n: 1, admit: 0},
			{at: time.Duration(jan1) + 30*day, n: 3, admit: 2}, // January 31st
			{at: time.Duration(jan1) + 31*day, n: 3, admit: 2}, // February 1st
		})
	})
	lim := mustNew(t, "kong:second=5 hour=100 year=1000")
	lim.Allow(1, epoch, 1)
	if lim.Keys() != 2 || lim.StateBytes() != 2*5*8 {
		t.Errorf("%d keys, %d bytes; want 2 keys of 5·8 bytes (the latest window, three counts, the year's expiry)", lim.Keys(), lim.StateBytes())
	}
}

func TestKongSpecErrors(t *testing.T) {
	for spec, want := range map[string]string{
		"kong:policy=local":             "at least one of second",
		"kong:minute=100 hour=50":       "hour=50 is lower than minute=100",
		"kong:minute=10 policy=x":       `policy: want local or redis, got "x"`,
		"kong:minute=10 policy=cluster": "policy=cluster",
		"kong:minute=0":                 "minute: want a whole number of requests, at least 1",
		"kong:minute=1.5":               "minute: want a whole number",
	} {
		if _, err := Parse(spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want an error with %q", spec, err, want)
		}
	}
}
