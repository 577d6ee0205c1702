package cluster

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/store"
)

// gubernatorFleet is a global-sync fleet to owners, hash-balanced so a test can choose
// which node a key reaches.
func gubernatorFleet(t *testing.T, c Config, alg string, p algorithms.Policy) *Fleet {
	t.Helper()
	c.Placement, c.SyncTo, c.Epoch, c.Balancer = "global-sync", "owner", epoch, "hash"
	f, err := New(c, alg, p, store.NewModel(), rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// pattern is the decisions of requests at the given offsets (ms from the epoch), of
// cost 1, for key: A admitted, R refused.
func pattern(f *Fleet, key uint32, at ...int64) string {
	var b strings.Builder
	for _, ms := range at {
		if f.Allow(key, epoch+ms*int64(time.Millisecond), 1).Allowed {
			b.WriteByte('A')
		} else {
			b.WriteByte('R')
		}
	}
	return b.String()
}

// Hand case (a): Gubernator's TOKEN_BUCKET is a fixed window from the first hit, alive
// at exactly its ExpireAt. Limit 3 per 1000 ms, one owner: hits at 0, 100, 200 pass,
// 300 and 1000 are refused (the window still lives at 1000), 1001 opens a new one.
func TestGubernatorTokenBucketIsAFixedWindowFromTheFirstHit(t *testing.T) {
	f := gubernatorFleet(t, Config{Nodes: 1}, "token-bucket", algorithms.Policy{Limit: 3, Window: time.Second})
	f.SetName(0, "user_1")
	if got := pattern(f, 0, 0, 100, 200, 300, 1000, 1001); got != "AAARRA" {
		t.Fatalf("got %s, want AAARRA", got)
	}
	// A second key opens its own window at its own first hit, not on the clock.
	f.SetName(1, "user_2")
	if got := pattern(f, 1, 1500, 1600, 1700, 1800, 2499, 2500, 2501); got != "AAARRRA" {
		t.Fatalf("second key: got %s, want AAARRRA", got)
	}
}

// Hand case (b): limit 5 with 3 left, a request for 4 is over the limit; without
// DRAIN_OVER_LIMIT the 3 stay and a request for 3 passes, with it the key is emptied and
// the request for 3 is refused.
func TestGubernatorDrainOverLimit(t *testing.T) {
	for _, c := range []struct {
		behaviors []string
		want      string
	}{{nil, "ARA"}, {[]string{"DRAIN_OVER_LIMIT"}, "ARR"}} {
		for _, alg := range GubernatorAlgorithms {
			f := gubernatorFleet(t, Config{Nodes: 1, Behaviors: c.behaviors}, alg, algorithms.Policy{Limit: 5, Window: time.Hour})
			f.SetName(0, "user_1")
			var got strings.Builder
			for _, cost := range []int64{2, 4, 3} {
				if f.Allow(0, epoch, cost).Allowed {
					got.WriteByte('A')
				} else {
					got.WriteByte('R')
				}
			}
			if got.String() != c.want {
				t.Errorf("%s, behaviours %v: got %s, want %s", alg, c.behaviors, got.String(), c.want)
			}
		}
	}
}

// twoNodes finds a key that reaches node peer of a two-node fleet while node owner owns
// it.
func twoNodes(t *testing.T, f *Fleet) (key uint32, peer, owner int) {
	t.Helper()
	for i := range 100 {
		f.SetName(uint32(i), fmt.Sprintf("user_%d", i))
		p, o := f.route(uint32(i)), f.place.(*gubernator).ring.owner(f.names[i])
		if p != o {
			return uint32(i), p, o
		}
	}
	t.Fatal("no key reaches a node that does not own it")
	return
}

// Hand case (c), GLOBAL since v2.4: limit 3 per second, two nodes. The peer answers 5
// requests from its own copy before any sync: A A A R R, and queues all 5 hits. 100 ms
// after the first (GlobalSyncWait) they reach the owner as one request of 5; the owner
// has no item, and the new-item path refuses 5 > 3 leaving 3 (it ignores the forced
// DRAIN_OVER_LIMIT). 100 ms later the owner broadcasts Remaining 3, and the peer, refused
// until then, admits 3 more in the same window.
func TestGubernatorGlobalHandCase(t *testing.T) {
	p := algorithms.Policy{Limit: 3, Window: time.Second}
	f := gubernatorFleet(t, Config{Nodes: 2, Sync: 100 * time.Millisecond, PeerLatency: 2 * time.Millisecond}, "token-bucket", p)
	key, peer, owner := twoNodes(t, f)
	if got := pattern(f, key, 0, 1, 2, 3, 4); got != "AAARR" {
		t.Fatalf("before any sync: %s, want AAARR", got)
	}
	if q := f.place.(*gubernator).nodes[peer].hits; len(q) != 1 || q[0].hits != 5 {
		t.Fatalf("queued %+v, want the 5 hits of every request, admitted or not, as one", q)
	}
	// The hits leave at 100 ms and land at 101 ms; the broadcast leaves at 201 ms and
	// lands at 202 ms.
	if got := pattern(f, key, 150, 201); got != "RR" {
		t.Fatalf("before the broadcast: %s, want RR", got)
	}
	if it := f.place.(*gubernator).nodes[owner].cache[key]; it == nil || it.remaining != 3 {
		t.Fatalf("the owner's item %+v, want Remaining 3 after the new-item path refused 5", it)
	}
	if got := pattern(f, key, 202, 203, 204, 205); got != "AAAR" {
		t.Fatalf("after the broadcast: %s, want AAAR", got)
	}
	// Had the owner held an item with 3 left, the forced drain would have emptied it, and
	// the broadcast would have refused the peer.
	f = gubernatorFleet(t, Config{Nodes: 2, Sync: 100 * time.Millisecond, PeerLatency: 2 * time.Millisecond}, "token-bucket", p)
	key, _, owner = twoNodes(t, f)
	f.place.(*gubernator).apply(f.place.(*gubernator).nodes[owner], key, 0, f.gMS(owner, epoch), f.gMS(owner, epoch), false) // a status query at the owner
	pattern(f, key, 0, 1, 2, 3, 4)
	if got := pattern(f, key, 202, 203); got != "RR" {
		t.Fatalf("drained at the owner: %s after the broadcast, want RR", got)
	}
	if it := f.place.(*gubernator).nodes[owner].cache[key]; it.remaining != 0 {
		t.Fatalf("the owner's item %+v, want drained to 0", it)
	}
}

// LEAKY_BUCKET: Remaining leaks back at Limit per Duration in whole hits, capped at
// Burst: limit 10 per 1 s (one hit per 100 ms), burst 2.
func TestGubernatorLeakyBucket(t *testing.T) {
	f := gubernatorFleet(t, Config{Nodes: 1}, "leaky-bucket", algorithms.Policy{Limit: 10, Window: time.Second, Burst: 2})
	f.SetName(0, "user_1")
	// 2 at once, then empty; 99 ms later nothing has leaked, at 100 ms one hit has; at 350 ms
	// two and a half, capped at the burst of 2.
	if got := pattern(f, 0, 0, 0, 0, 99, 100, 101, 350, 350, 350); got != "AARRARAAR" {
		t.Fatalf("got %s, want AARRARAAR", got)
	}
}

// Between broadcasts each node answers from its copy, which counts its own requests only:
// the fleet passes the limit by what the others admitted meanwhile — little at 10 ms, more
// as the interval grows (where the limit falls between two broadcasts decides how much) —
// and the exchanges fall with the interval; no decision waits for them.
func TestGubernatorGlobalOverAdmitsWithTheInterval(t *testing.T) {
	const rate = 50.0
	prevExchanges := 1e9
	for _, sync := range []time.Duration{10 * time.Millisecond, 100 * time.Millisecond, time.Second, 5 * time.Second} {
		c := Config{Nodes: 10, Balancer: "round-robin", Placement: "global-sync", SyncTo: "owner", Sync: sync, PeerLatency: time.Millisecond}
		f, res := driveFleet(t, c, "token-bucket", perMinute, 1, rate, 3*time.Minute)
		d := f.Designs()
		t.Logf("sync %s: effective %d, %.3f exchanges a decision", sync, res.EffectiveLimit, d.PeerMessages)
		switch {
		case sync == 10*time.Millisecond && res.EffectiveLimit > 102:
			t.Errorf("sync 10ms: effective %d, want within a request or two of the limit", res.EffectiveLimit)
		case sync > 10*time.Millisecond && res.EffectiveLimit <= 100:
			t.Errorf("sync %s: effective %d, want above the limit", sync, res.EffectiveLimit)
		}
		if d.Syncs == 0 || d.PeerHops != 0 || res.AddedLatencyMaxMS != 0 || d.PeerMessages >= prevExchanges {
			t.Errorf("sync %s: %d exchanges (%.3f a decision, the shorter interval %.3f), %.3f hops, a decision waited %.2f ms",
				sync, d.Syncs, d.PeerMessages, prevExchanges, d.PeerHops, res.AddedLatencyMaxMS)
		}
		prevExchanges = d.PeerMessages
	}
	// Sync 0 turns GLOBAL off: every request is decided by the owner, exactly, a hop away
	// from the nine nodes that do not own the key.
	c := Config{Nodes: 10, Balancer: "round-robin", Placement: "global-sync", SyncTo: "owner", PeerLatency: time.Millisecond}
	f, res := driveFleet(t, c, "token-bucket", perMinute, 1, rate, 3*time.Minute)
	if d := f.Designs(); res.EffectiveLimit > 100+1 || d.PeerHops != 0.9 || d.Syncs != 0 {
		t.Errorf("sync 0: effective %d, %.3f hops, %d exchanges; want the limit, 0.9, none", res.EffectiveLimit, d.PeerHops, d.Syncs)
	}
}

// A partition drops what crosses it: hits a cut-off node sends are lost, so it decides
// alone from its copy, and the fleet passes more than it does unpartitioned.
func TestGubernatorPartitionLosesHits(t *testing.T) {
	c := Config{Nodes: 4, Balancer: "round-robin", Placement: "global-sync", SyncTo: "owner", Sync: 100 * time.Millisecond,
		Outages: []Outage{{At: time.Minute, For: 2 * time.Minute, Policy: "fail-open", Nodes: 2}}}
	f, res := driveFleet(t, c, "token-bucket", perMinute, 1, 40, 4*time.Minute)
	if f.Designs().SyncFailures == 0 || res.OutageAdmitted == 0 {
		t.Fatalf("%d failed sends, %d outage admissions", f.Designs().SyncFailures, res.OutageAdmitted)
	}
	c.Outages = nil
	_, calm := driveFleet(t, c, "token-bucket", perMinute, 1, 40, 4*time.Minute)
	if res.EffectiveLimit <= calm.EffectiveLimit {
		t.Errorf("partitioned: effective %d, not above the unpartitioned %d", res.EffectiveLimit, calm.EffectiveLimit)
	}
}

// Gubernator's knobs are checked: its two algorithms only, a batch limit within its
// maxBatchSize, the behaviours it has.
func TestGubernatorConfig(t *testing.T) {
	p := algorithms.Policy{Limit: 10, Window: time.Second}
	base := Config{Nodes: 2, Placement: "global-sync", SyncTo: "owner", Epoch: epoch}
	for _, c := range []struct {
		edit func(*Config)
		alg  string
		want string
	}{
		{func(*Config) {}, "sliding-window", `Gubernator has no "sliding-window"`},
		{func(c *Config) { c.GlobalBatchLimit = 1001 }, "token-bucket", "global_batch_limit"},
		{func(c *Config) { c.Behaviors = []string{"RESET_REMAINING"} }, "token-bucket", `unknown behaviour "RESET_REMAINING"`},
		{func(c *Config) { c.SyncTo, c.Sync = "store", 10*time.Millisecond }, "fixed-window", "below the 20ms Kong accepts"},
	} {
		cfg := base
		c.edit(&cfg)
		if _, err := New(cfg, c.alg, p, store.NewModel(), rand.New(rand.NewPCG(1, 2))); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v %s: %v, want %q", cfg, c.alg, err, c.want)
		}
	}
	f := gubernatorFleet(t, Config{Nodes: 2}, "token-bucket", p)
	if DefaultSync != 100*time.Millisecond || f.place.(*gubernator).batchLimit != 1000 {
		t.Errorf("defaults: sync %s, batch limit %d; want Gubernator's 100ms and 1000", DefaultSync, f.place.(*gubernator).batchLimit)
	}
}

// GlobalBatchLimit sends the hits at once when that many keys are queued, before the
// sync wait ends.
func TestGubernatorBatchLimit(t *testing.T) {
	f := gubernatorFleet(t, Config{Nodes: 2, Sync: time.Second, GlobalBatchLimit: 2}, "token-bucket", algorithms.Policy{Limit: 10, Window: time.Minute})
	var peerKeys []uint32
	for i := 0; len(peerKeys) < 3 && i < 500; i++ {
		f.SetName(uint32(i), fmt.Sprintf("user_%d", i))
		if f.route(uint32(i)) == 0 && f.place.(*gubernator).ring.owner(f.names[i]) == 1 {
			peerKeys = append(peerKeys, uint32(i))
		}
	}
	f.Allow(peerKeys[0], epoch, 1)
	if f.place.(*gubernator).sends != 0 {
		t.Fatal("one key queued: nothing sent yet")
	}
	f.Allow(peerKeys[1], epoch, 1)
	if f.place.(*gubernator).sends != 1 || len(f.place.(*gubernator).nodes[0].hits) != 0 {
		t.Fatalf("two keys queued at a batch limit of 2: %d sends, %d still queued", f.place.(*gubernator).sends, len(f.place.(*gubernator).nodes[0].hits))
	}
}
