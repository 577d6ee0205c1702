package cluster

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/store"
)

func TestSizeClass(t *testing.T) {
	for n, want := range map[int64]int64{1: 8, 8: 8, 9: 16, 24: 32, 44: 48, 64: 64, 84: 96, 128: 128, 129: 160, 160: 160, 161: 192, 257: 320, 600: 640} {
		if got := sizeClass(n); got != want {
			t.Errorf("sizeClass(%d) = %d, want %d", n, got, want)
		}
	}
}

// The memory model against its calibration: the growth of used_memory per key that a
// real Redis 7.0.15 showed for 3000 and 6000 keys with a TTL, by name length.
func TestEvictionModelMatchesItsCalibration(t *testing.T) {
	for _, c := range []struct {
		kind    string
		nameLen int
		keys    int
		perKey  float64
		policy  string
	}{
		{"counter", 20, 3000, 117.8, "volatile-ttl"},
		{"counter", 40, 3000, 133.8, "volatile-ttl"},
		{"counter", 60, 3000, 149.8, "volatile-ttl"},
		{"counter", 80, 6000, 181.8, "volatile-ttl"},
		{"counter", 40, 3000, 149.8, "allkeys-lru"}, // no shared integers under LRU
		{"bucket", 20, 3000, 181.8, "volatile-ttl"},
		{"bucket", 60, 6000, 213.8, "volatile-ttl"},
		{"bucket", 80, 3000, 245.8, "volatile-ttl"},
	} {
		s, err := newEvictingStore(store.NewModel(), Eviction{MaxMemory: 1 << 40, Policy: c.policy, OutagePolicy: "fail-open"})
		if err != nil {
			t.Fatal(err)
		}
		before := s.used()
		for i := range c.keys {
			base := fmt.Sprintf("k%07d:", i)
			name := base + strings.Repeat("x", c.nameLen-len(base))
			if c.kind == "counter" {
				_, err = s.IncrExpire(name, 7, 3600000)
			} else {
				err = s.SetBucket(name, 1767261600123456, 6000000000, 3600000)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		got := float64(s.used()-before) / float64(c.keys)
		if math.Abs(got-c.perKey) > 0.5 {
			t.Errorf("%s, %d-byte names, %d keys, %s: %.1f B a key, Redis used %.1f", c.kind, c.nameLen, c.keys, c.policy, got, c.perKey)
		}
	}
}

// evictionRun drives clients that each send 20 requests at random over a limit of 2 per
// 10 minutes, a request every 5 ms on average, through a shared store under ev.
func evictionRun(t *testing.T, ev *Eviction, st store.Store, clients int) (*Fleet, *report.Distributed) {
	t.Helper()
	return evictionTraffic(t, ev, st, clients, 20*clients, 2)
}

// evictionTraffic sends requests, each from one of clients at random (every key as
// likely as any other, so that no eviction policy can keep more of the keys asked for
// than any other), a request every 5 ms on average, over a fixed window of limit per 10
// minutes on 4 nodes.
func evictionTraffic(t *testing.T, ev *Eviction, st store.Store, clients, requests int, limit int64) (*Fleet, *report.Distributed) {
	t.Helper()
	c := Config{Nodes: 4, Balancer: "round-robin", Placement: "shared", Epoch: epoch, Prefix: "ev:", Eviction: ev}
	p := algorithms.Policy{Limit: limit, Window: 10 * time.Minute}
	f, err := New(c, "fixed-window", p, st, rand.New(rand.NewPCG(7, 8)))
	if err != nil {
		t.Fatal(err)
	}
	finish := metered(f, p)
	for k := range clients {
		f.SetName(uint32(k), fmt.Sprintf("user_%05d", k))
	}
	rng := rand.New(rand.NewPCG(9, 10))
	at := epoch
	for range requests {
		at += int64(rng.ExpFloat64() * float64(5*time.Millisecond))
		f.Allow(uint32(rng.IntN(clients)), at, 1)
	}
	res, err := finish("v")
	if err != nil {
		t.Fatal(err)
	}
	return f, res
}

// Under allkeys-lru with room for about half the keys, counters are evicted while their
// clients are over the limit, and each comes back from zero: free passes, to many keys,
// and an effective limit above the advertised one. With room for every key, none.
func TestEvictionGivesFreePasses(t *testing.T) {
	const clients = 2000
	f, res := evictionRun(t, &Eviction{MaxMemory: 100 << 10, Policy: "allkeys-lru", OutagePolicy: "fail-closed"}, store.NewModel(), clients)
	d := f.Designs()
	if d.EvictedKeys == 0 || d.FreePasses == 0 || d.FreePassKeys < clients/4 || res.EffectiveLimit <= 2 {
		t.Errorf("100 KiB for 2000 keys: %d evicted, %d free passes to %d keys, effective %d", d.EvictedKeys, d.FreePasses, d.FreePassKeys, res.EffectiveLimit)
	}
	if d.StoreBytesMax > 100<<10+200 || d.StoreKeysMax >= clients {
		t.Errorf("the keys took %d B (%d keys) under a 100 KiB maxmemory", d.StoreBytesMax, d.StoreKeysMax)
	}
	f, res = evictionRun(t, &Eviction{MaxMemory: 10 << 20, Policy: "allkeys-lru", OutagePolicy: "fail-closed"}, store.NewModel(), clients)
	if d := f.Designs(); d.EvictedKeys != 0 || d.FreePasses != 0 || res.EffectiveLimit != 2 {
		t.Errorf("10 MiB: %d evicted, %d free passes, effective %d; want none and 2", d.EvictedKeys, d.FreePasses, res.EffectiveLimit)
	}
}

// Under noeviction a full store refuses the writes of admissions (reads still run): the
// nodes apply the eviction's outage policy — fail-closed refuses those clients, no free
// pass; fail-open admits them, free passes.
func TestNoEvictionFailsWrites(t *testing.T) {
	f, res := evictionRun(t, &Eviction{MaxMemory: 100 << 10, Policy: "noeviction", OutagePolicy: "fail-closed"}, store.NewModel(), 2000)
	d := f.Designs()
	if d.EvictedKeys != 0 || d.OOMErrors == 0 || d.FreePasses != 0 || res.EffectiveLimit > 2 {
		t.Errorf("noeviction, fail-closed: %d evicted, %d OOM, %d free passes, effective %d", d.EvictedKeys, d.OOMErrors, d.FreePasses, res.EffectiveLimit)
	}
	f, _ = evictionRun(t, &Eviction{MaxMemory: 100 << 10, Policy: "noeviction", OutagePolicy: "fail-open"}, store.NewModel(), 2000)
	if d := f.Designs(); d.OOMErrors == 0 || d.FreePasses == 0 {
		t.Errorf("noeviction, fail-open: %d OOM, %d free passes; want both", d.OOMErrors, d.FreePasses)
	}
}

// volatile-ttl takes the keys nearest their end first: with counters named by window, the
// past windows' counters, which no decision reads again — so it gives fewer free passes
// than allkeys-lru, which also takes live counters used a while ago.
func TestVolatileTTLEvictsPastWindowsFirst(t *testing.T) {
	run := func(policy string) DesignFigures {
		c := Config{Nodes: 2, Balancer: "round-robin", Placement: "shared", Epoch: epoch, Prefix: "ev:",
			Eviction: &Eviction{MaxMemory: 40 << 10, Policy: policy, OutagePolicy: "fail-closed"}}
		f, err := New(c, "fixed-window", algorithms.Policy{Limit: 3, Window: time.Minute}, store.NewModel(), rand.New(rand.NewPCG(1, 1)))
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(3, 3))
		for i := range 60000 {
			k := uint32(rng.IntN(500))
			f.SetName(k, fmt.Sprintf("user_%03d", k))
			f.Allow(k, epoch+int64(i)*int64(3*time.Millisecond), 1)
		}
		return f.Designs()
	}
	lru, ttl := run("allkeys-lru"), run("volatile-ttl")
	t.Logf("allkeys-lru %d evicted %d free; volatile-ttl %d evicted %d free", lru.EvictedKeys, lru.FreePasses, ttl.EvictedKeys, ttl.FreePasses)
	if lru.EvictedKeys == 0 || ttl.EvictedKeys == 0 || ttl.FreePasses >= lru.FreePasses {
		t.Errorf("allkeys-lru: %d evicted, %d free passes; volatile-ttl: %d evicted, %d free passes; want fewer under volatile-ttl",
			lru.EvictedKeys, lru.FreePasses, ttl.EvictedKeys, ttl.FreePasses)
	}
}

// The eviction model runs on every face alike: the model and miniredis give the same
// decisions and figures.
func TestEvictionFacesAgree(t *testing.T) {
	for _, policy := range EvictionPolicies {
		a, b := onModelAndMiniredis(t, func(st store.Store) string {
			ev := Eviction{MaxMemory: 8 << 10, Policy: policy, OutagePolicy: "fail-open"}
			f, r := evictionRun(t, &ev, st, 100)
			r.Store = ""
			return fmt.Sprintf("%+v %+v", *r, f.Designs())
		})
		if a != b {
			t.Errorf("%s: model and miniredis differ:\n%s\n%s", policy, a, b)
		}
	}
}
