package algorithms

import (
	"math/rand/v2"
	"strconv"
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

// kongPair returns two limiters of spec, the second with its records wide from the start.
func kongPair(t *testing.T, spec string) (compact, wide *Kong) {
	t.Helper()
	compact, wide = mustNew(t, spec).(*Kong), mustNew(t, spec).(*Kong)
	if !compact.compact {
		t.Fatalf("%s: records not compact", spec)
	}
	wide.compact = false
	return compact, wide
}

// TestKongCompactDecidesAsWide: the compact records (32-bit counts and window ends) decide
// as the wide ones, decision for decision, over several keys, costs, steps back, redis
// counting far past a limit, and a jump a century ahead and back, which turns the records
// wide on the way.
func TestKongCompactDecidesAsWide(t *testing.T) {
	for _, spec := range []string{"kong:second=3 minute=10 hour=40", "kong:second=3 minute=10 hour=40 policy=redis", "kong:minute=5"} {
		compact, wide := kongPair(t, spec)
		rng := rand.New(rand.NewPCG(3, 4))
		now := epoch
		for i := range 4000 {
			switch {
			case i == 2000:
				if !compact.compact || compact.StateBytes() != int64(4*compact.stride*compact.Keys()) {
					t.Fatalf("%s: %d bytes before the jump; want compact records of 4 bytes a word", spec, compact.StateBytes())
				}
				now += 100 * 365 * 24 * int64(time.Hour)
			case i == 2100:
				now -= 100 * 365 * 24 * int64(time.Hour)
			case rng.IntN(50) == 0:
				now -= rng.Int64N(int64(90 * time.Second))
			default:
				now += rng.Int64N(int64(800 * time.Millisecond))
			}
			key, cost := rng.Uint32N(4), int64(1+rng.IntN(2))
			if rng.IntN(100) == 0 {
				cost = 1 << 40
			}
			if got, want := compact.Allow(key, now, cost), wide.Allow(key, now, cost); got != want {
				t.Fatalf("%s: request %d (key %d, cost %d): compact %+v, wide %+v", spec, i, key, cost, got, want)
			}
		}
		if compact.compact {
			t.Errorf("%s: still compact after a window end a century past the first", spec)
		}
	}
}

// TestKongCountSaturates: at the highest limit the compact records hold, a redis count
// pushed past 2³² stays there rather than wrapping to a count that would admit; one more
// limit is kept in wide records.
func TestKongCountSaturates(t *testing.T) {
	compact, wide := kongPair(t, "kong:second=4294967294 policy=redis")
	for i, r := range []struct {
		cost int64
		ok   bool
	}{{4294967294, true}, {2, false}, {1, false}, {1 << 62, false}, {1, false}} {
		got, want := compact.Allow(7, epoch, r.cost), wide.Allow(7, epoch, r.cost)
		if got != want || got.Allowed != r.ok {
			t.Errorf("request %d (cost %d): compact %+v, wide %+v, want allowed=%v", i, r.cost, got, want, r.ok)
		}
	}
	if lim := mustNew(t, "kong:second=4294967295").(*Kong); lim.compact || !lim.Allow(0, epoch, 4294967295).Allowed {
		t.Errorf("second=4294967295: compact %v; want wide records that admit the whole limit", lim.compact)
	}
}

// kongReference is the plugin as its source reads, with nothing made compact or fast: per
// key and period, a counter per window start (Unix seconds, calendar-aligned in UTC) that
// lives for the period's TTL from its creation. Time must not go backwards.
type kongReference struct {
	limits   map[string]int64 // per period name
	redis    bool
	counters map[kongRefKey]kongRefCounter
}

type kongRefKey struct {
	key    uint32
	period string
	start  int64
}

type kongRefCounter struct{ count, expires int64 } // expires: Unix milliseconds

func (r *kongReference) decide(key uint32, now, cost int64) bool {
	ms := nsToMs(now)
	t := time.UnixMilli(ms).UTC()
	ok := true
	var keys []kongRefKey
	for _, p := range kongPeriods {
		limit, on := r.limits[p.name]
		if !on {
			continue
		}
		var start time.Time
		switch p.name {
		case "month":
			start = time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
		case "year":
			start = time.Date(t.Year(), time.January, 1, 0, 0, 0, 0, time.UTC)
		default:
			start = t.Truncate(time.Duration(p.seconds) * time.Second)
		}
		k := kongRefKey{key, p.name, start.Unix()}
		if c, live := r.counters[k]; live && ms >= c.expires {
			delete(r.counters, k)
		}
		if r.counters[k].count+cost > limit {
			ok = false
		}
		keys = append(keys, k)
	}
	if ok || r.redis {
		for _, k := range keys {
			c, live := r.counters[k]
			if !live {
				for _, p := range kongPeriods {
					if p.name == k.period {
						c.expires = ms + p.ttl*1000
					}
				}
			}
			c.count += cost
			r.counters[k] = c
		}
	}
	return ok
}

// TestKongDecidesAsReference: over many keys and times that fall on and just around the
// edges of seconds, minutes, hours, days and months, the model (compact records where it
// keeps them, through Admit and through Allow) decides as the plain reading of the plugin
// does, request for request.
func TestKongDecidesAsReference(t *testing.T) {
	for _, spec := range []string{
		"kong:second=3 minute=10 hour=40", "kong:second=3 minute=10 hour=40 policy=redis",
		"kong:second=2", "kong:minute=4 day=30", "kong:second=5 minute=7 hour=9 day=11 policy=redis",
		"kong:hour=6 month=20", "kong:minute=3 year=8 policy=redis",
	} {
		t.Run(spec, func(t *testing.T) {
			ref := &kongReference{limits: map[string]int64{}, counters: map[kongRefKey]kongRefCounter{}}
			for _, field := range strings.Fields(strings.TrimPrefix(spec, "kong:")) {
				name, value, _ := strings.Cut(field, "=")
				if name == "policy" {
					ref.redis = value == "redis"
					continue
				}
				limit, err := strconv.ParseInt(value, 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				ref.limits[name] = limit
			}
			admitting, allowing := mustNew(t, spec).(*Kong), mustNew(t, spec).(*Kong)
			rng := rand.New(rand.NewPCG(5, 6))
			now := time.Date(2026, 1, 31, 23, 59, 0, 0, time.UTC).UnixNano()
			edges := []time.Duration{time.Second, time.Minute, time.Hour, 24 * time.Hour}
			for i := range 60000 {
				switch r := rng.IntN(100); {
				case r < 3: // to just before, at or after the next edge of some period
					edge := int64(edges[rng.IntN(len(edges))])
					now = (now/edge+1)*edge + rng.Int64N(int64(3*time.Millisecond)) - int64(time.Millisecond)
				case r < 4:
					now += rng.Int64N(int64(40 * 24 * time.Hour))
				default:
					now += rng.Int64N(int64(30 * time.Millisecond))
				}
				key, cost := rng.Uint32N(300), int64(1)
				if rng.IntN(20) == 0 {
					cost = 1 + rng.Int64N(4)
				}
				want := ref.decide(key, now, cost)
				if got, _ := admitting.Admit(key, now, cost); got != want {
					t.Fatalf("request %d (key %d at %s, cost %d): Admit %v, reference %v", i, key, time.Unix(0, now).UTC().Format(time.RFC3339Nano), cost, got, want)
				}
				if got := allowing.Allow(key, now, cost).Allowed; got != want {
					t.Fatalf("request %d (key %d at %s, cost %d): Allow %v, reference %v", i, key, time.Unix(0, now).UTC().Format(time.RFC3339Nano), cost, got, want)
				}
			}
		})
	}
}
