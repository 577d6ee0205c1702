package algorithms

import (
	"testing"
	"time"
)

// TestEnvoyRatelimitTimeline: the reference's hand case (3 per minute at unix 1699999980 +
// 0, 10, 20, 30, 59, 60: A A A R R A), the options that leave one descriptor's decisions
// alone, and shadow mode.
func TestEnvoyRatelimitTimeline(t *testing.T) {
	minute := time.Duration(1699999980*int64(time.Second) - epoch)
	hand := []step{
		{at: minute, want: allowed(2, time.Minute)},
		{at: minute + 10*time.Second, want: allowed(1, 50*time.Second)},
		{at: minute + 20*time.Second, want: allowed(0, 40*time.Second)},
		{at: minute + 30*time.Second, want: refused(0, 30*time.Second, 30*time.Second)},
		{at: minute + 59*time.Second, want: refused(0, time.Second, time.Second)},
		{at: minute + 60*time.Second, want: allowed(2, time.Minute)},    // a new key, …_1700000040
		{at: minute + 30*time.Second, want: allowed(1, 90*time.Second)}, // stamped back: counted in the latest window
		{at: minute + 60*time.Second, key: 1, cost: 4, want: refused(0, Never, time.Minute)},
	}
	for _, spec := range []string{
		"envoy-ratelimit:unit=minute requests_per_unit=3",
		"envoy-ratelimit:unit=minute requests_per_unit=3 local_cache",
		"envoy-ratelimit:unit=minute requests_per_unit=3 stop_cache_key_increment_when_overlimit",
	} {
		t.Run(spec, func(t *testing.T) { runTimeline(t, mustNew(t, spec), hand) })
	}
	t.Run("counts", func(t *testing.T) {
		// Refused requests count in Redis; with the local cache only the first over-limit
		// one does.
		plain := mustNew(t, "envoy-ratelimit:unit=second requests_per_unit=2").(*EnvoyRatelimit)
		cached := mustNew(t, "envoy-ratelimit:unit=second requests_per_unit=2 local_cache").(*EnvoyRatelimit)
		for range 6 {
			plain.Allow(0, epoch, 1)
			cached.Allow(0, epoch, 1)
		}
		if plain.state[0].count != 6 || cached.state[0].count != 3 {
			t.Errorf("counted %d and, with the local cache, %d; want 6 and 3", plain.state[0].count, cached.state[0].count)
		}
	})
	t.Run("week and month", func(t *testing.T) {
		// A week starts on a Thursday 00:00 UTC (the epoch's weekday), a month is 30 days.
		thursday := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) // 2026-01-01 is a Thursday
		week := time.Duration(thursday.UnixNano() - epoch)
		runTimeline(t, mustNew(t, "envoy-ratelimit:unit=week requests_per_unit=1"), []step{
			{at: week - 1, want: allowed(0, 1)},
			{at: week, want: allowed(0, 7*24*time.Hour)},
		})
		// The first 30-day block since 1970 to start after 2026-01-01.
		block := time.Duration((time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Unix()/2592000+1)*2592000*int64(time.Second) - epoch)
		runTimeline(t, mustNew(t, "envoy-ratelimit:unit=month requests_per_unit=1"), []step{
			{at: block - 1, want: allowed(0, 1)},
			{at: block, want: allowed(0, 30*24*time.Hour)},
		})
	})
	t.Run("shadow mode", func(t *testing.T) {
		lim := mustNew(t, "envoy-ratelimit:unit=second requests_per_unit=2 shadow_mode").(*EnvoyRatelimit)
		runTimeline(t, lim, []step{{at: 0, n: 5, admit: 5}})
		if lim.WouldRefuse() != 3 {
			t.Errorf("shadow mode would have refused %d, want 3", lim.WouldRefuse())
		}
		if _, ok := BoundOf("envoy-ratelimit:unit=second requests_per_unit=2 shadow_mode", Policy{Limit: 1, Window: time.Second}, 0); ok {
			t.Error("a bound for a rule that refuses nothing")
		}
	})
}
