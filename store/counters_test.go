package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
)

// TestKongDecidesAsOneNode: on one node, whose clock only moves forward, Kong's counters
// in the store decide as the one-node model with policy=redis, request for request, over
// many keys and times on and around the edges of seconds, minutes, hours and months:
// the same admissions and Remaining, and RetryAfter and Reset to the µs (the store's
// unit) for periods of a fixed length. Each decision takes one round trip per period.
func TestKongDecidesAsOneNode(t *testing.T) {
	for _, spec := range []string{
		"kong:second=3 minute=10 hour=40 policy=redis", "kong:second=2 policy=redis",
		"kong:minute=4 day=30 policy=redis", "kong:hour=6 month=20 policy=redis",
	} {
		t.Run(spec, func(t *testing.T) {
			shared, err := NewCounters(NewModel(), spec, "rl:")
			if err != nil {
				t.Fatal(err)
			}
			one, err := algorithms.New(spec, algorithms.Policy{Limit: 1, Window: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			calendar := strings.Contains(spec, "month")
			rng := rand.New(rand.NewPCG(8, 9))
			now := time.Date(2026, 1, 31, 23, 59, 0, 0, time.UTC).UnixNano()
			edges := []time.Duration{time.Second, time.Minute, time.Hour, 24 * time.Hour}
			admitted, refused := 0, 0
			for i := range 6000 {
				switch r := rng.IntN(100); {
				case r < 3:
					edge := int64(edges[rng.IntN(len(edges))])
					now = (now/edge+1)*edge + rng.Int64N(int64(3*time.Millisecond)) - int64(time.Millisecond)
				case r < 4:
					now += rng.Int64N(int64(20 * 24 * time.Hour))
				default:
					now += rng.Int64N(int64(60 * time.Millisecond))
				}
				key, cost := rng.Uint32N(6), int64(1)
				if rng.IntN(20) == 0 {
					cost = 1 + rng.Int64N(4)
				}
				got, trips, err := shared.Allow(fmt.Sprint(key), At{Store: now, Node: now}, cost)
				if err != nil {
					t.Fatal(err)
				}
				want := one.Allow(key, now, cost)
				what := fmt.Sprintf("request %d (key %d at %s, cost %d)", i, key, time.Unix(0, now).UTC().Format(time.RFC3339Nano), cost)
				if got.Allowed != want.Allowed || got.Remaining != want.Remaining || trips != shared.Periods() {
					t.Fatalf("%s: store %+v in %d trips, one node %+v", what, got, trips, want)
				}
				if !calendar && (got.RetryAfter != want.RetryAfter.Truncate(time.Microsecond) && (want.RetryAfter-got.RetryAfter).Abs() > time.Microsecond ||
					(want.Reset-got.Reset).Abs() > time.Microsecond) {
					t.Fatalf("%s: store retry %s reset %s, one node retry %s reset %s", what, got.RetryAfter, got.Reset, want.RetryAfter, want.Reset)
				}
				if got.Allowed {
					admitted++
				} else {
					refused++
				}
			}
			if admitted < 300 || refused < 300 {
				t.Fatalf("%d admitted, %d refused: the trace proves little", admitted, refused)
			}
		})
	}
}

// TestKongCountsEveryPeriod: the store holds one counter per period, named by the
// plugin's period and the window's start, which counts refused requests too (policy=redis);
// a spec of any other policy has no shared form.
func TestKongCountsEveryPeriod(t *testing.T) {
	st := NewModel()
	k, err := NewCounters(st, "kong:second=2 minute=5 policy=redis", "rl:")
	if err != nil {
		t.Fatal(err)
	}
	noon := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC).UnixNano()
	var got []bool
	for i := range 4 {
		r, _, err := k.Allow("u", Now(noon+int64(i)*int64(100*time.Millisecond)), 1)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r.Allowed)
	}
	if want := []bool{true, true, false, false}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("decisions %v, want %v", got, want)
	}
	keys, _ := st.Keys("rl:")
	var named []string
	for _, key := range keys {
		named = append(named, fmt.Sprintf("%s=%d", key.Name, key.Value))
	}
	if want := "rl:{u}:kong:minute:1767268800=4 rl:{u}:kong:second:1767268800=4"; strings.Join(named, " ") != want {
		t.Errorf("keys %v, want %s", named, want)
	}
	for _, spec := range []string{"kong:second=2", "kong:second=2 policy=local", "fixed-window", "kong:nonsense=1"} {
		if _, err := NewCounters(st, spec, "rl:"); err == nil || SharesCounters(spec) {
			t.Errorf("NewCounters(%q) took it: want no shared form", spec)
		}
	}
}

// TestStringCounterBytesOnRealRedis: StringCounterBytes is the real server's MEMORY USAGE
// of an INCRBY's counter with a TTL, for every name length to 300 bytes, at a count the
// server may share and at one it may not; and Kong's counters of one client, as the
// script leaves them, take ClientBytes.
func TestStringCounterBytesOnRealRedis(t *testing.T) {
	real := realRedis(t)
	prefix := testPrefix(t, 0)
	defer deleteUnder(t, real, prefix)
	ctx := context.Background()
	short := fmt.Sprintf("s%d:", time.Now().UnixNano()%1e6) // names from a few bytes on
	for n := len(short) + 1; n <= 300; n++ {
		name := short + strings.Repeat("k", n-len(short))
		for _, count := range []int64{5, 20000} {
			real.client.Del(ctx, name)
			if err := real.client.IncrBy(ctx, name, count).Err(); err != nil {
				t.Fatal(err)
			}
			real.client.PExpire(ctx, name, time.Minute)
			got, err := real.client.MemoryUsage(ctx, name, 0).Result()
			if err != nil {
				t.Fatal(err)
			}
			if want := StringCounterBytes(n); got != want {
				t.Errorf("name of %d bytes, count %d: MEMORY USAGE %d, StringCounterBytes %d", n, count, got, want)
			}
		}
		real.client.Del(ctx, name)
	}
	k, err := NewCounters(real, "kong:second=5 minute=50 hour=500 day=5000 policy=redis", prefix)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC).UnixNano()
	if _, _, err := k.Allow("user_0000001", Now(now), 1); err != nil {
		t.Fatal(err)
	}
	keys, err := real.Keys(prefix)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(keys))
	for i, key := range keys {
		names[i] = key.Name
	}
	got, err := real.memoryUsage(names)
	if err != nil {
		t.Fatal(err)
	}
	if want := k.ClientBytes("user_0000001", now); len(keys) != 4 || got != want {
		t.Errorf("%d counters taking %d bytes on the real server; want 4 taking ClientBytes %d", len(keys), got, want)
	}
}

// TestKongRetryAfterIsExact: a request Kong's counters refused (and counted, as
// policy=redis counts every request) passes again RetryAfter later if nothing else is
// sent, and not a µs sooner; each probe replays the trace, the refused request in it, on
// a fresh store.
func TestKongRetryAfterIsExact(t *testing.T) {
	const spec = "kong:second=3 minute=8 hour=30 policy=redis"
	base := time.Date(2026, 1, 1, 10, 59, 58, 0, time.UTC).UnixNano()
	for seed := uint64(1); seed <= 6; seed++ {
		rng := rand.New(rand.NewPCG(seed, 13))
		type req struct{ at, cost int64 }
		var trace []req
		now := base
		for range 40 {
			now += rng.Int64N(int64(400*time.Millisecond)) / 1000 * 1000
			trace = append(trace, req{now, 1 + rng.Int64N(2)})
		}
		decide := func(n int, at, cost int64) Reply {
			k, err := NewCounters(NewModel(), spec, "rl:")
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range trace[:n] {
				if _, _, err := k.Allow("u", Now(r.at), r.cost); err != nil {
					t.Fatal(err)
				}
			}
			r, _, err := k.Allow("u", Now(at), cost)
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		probed := 0
		for i, r := range trace {
			d := decide(i, r.at, r.cost)
			if d.Allowed || d.RetryAfter == algorithms.Never {
				continue
			}
			probed++
			if !decide(i+1, r.at+int64(d.RetryAfter), r.cost).Allowed {
				t.Errorf("seed %d step %d: refused again RetryAfter %s later", seed, i, d.RetryAfter)
			}
			if decide(i+1, r.at+int64(d.RetryAfter)-int64(time.Microsecond), r.cost).Allowed {
				t.Errorf("seed %d step %d: admitted before RetryAfter %s", seed, i, d.RetryAfter)
			}
		}
		if probed < 5 {
			t.Errorf("seed %d: %d refusals probed: the trace proves little", seed, probed)
		}
	}
}

// TestKongLoadAndMeasureOnRealRedis: rlsim memory's load writes Kong's counters as the
// script does, one per period, and their MEMORY USAGE is ClientBytes of the names.
func TestKongLoadAndMeasureOnRealRedis(t *testing.T) {
	real := realRedis(t)
	prefix := testPrefix(t, 0)
	defer deleteUnder(t, real, prefix)
	const spec = "kong:second=5 minute=100 hour=1000 policy=redis"
	m, err := LoadAndMeasure(real, spec, algorithms.Policy{Limit: 100, Window: time.Minute}, 50, prefix, MeasureHooks{})
	if err != nil {
		t.Fatal(err)
	}
	k, _ := NewCounters(NewModel(), spec, prefix)
	if want := float64(k.ClientBytes(ClientName(0), memoryNow)); m.BytesPerKey != want || m.Clients != 50 || m.Encoding != "int" {
		t.Errorf("measured %+v; want 50 clients of %.0f bytes, int-encoded", m, want)
	}
	if keys, _ := real.Keys(prefix); len(keys) != 0 {
		t.Errorf("%d keys left under the prefix", len(keys))
	}
}
