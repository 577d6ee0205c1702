package cluster

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/store"
)

// Sync 0 is synchronous: every decision reads the totals and counts its hit, so the fleet
// holds the limit, at one round trip to the store a decision.
func TestGlobalSyncZeroIsExact(t *testing.T) {
	for _, alg := range GlobalAlgorithms() {
		c := Config{Nodes: 10, Balancer: "round-robin", Placement: "global-sync", SyncTo: "store", Latency: time.Millisecond, PeerLatency: time.Millisecond}
		_, res := driveFleet(t, c, alg, perMinute, 1, 50, 3*time.Minute)
		if res.EffectiveLimit > 100 {
			t.Errorf("%s, sync 0: effective %d, want at most 100", alg, res.EffectiveLimit)
		}
		if res.StoreRoundTrips != 1 || res.AddedLatencyP50MS != 1 {
			t.Errorf("%s, sync 0: %.3f round trips, p50 %.2f ms; want 1 and 1", alg, res.StoreRoundTrips, res.AddedLatencyP50MS)
		}
	}
}

// The over-admission of counts synced every S among N nodes sharing a client's traffic
// of rate r is what the others admitted and a node has not read: r·S·(N−1)/N (derived in
// globalsync.go and docs/distributed.md), at most (N−1)·L, every node enforcing the whole
// limit alone. Runs of both counter algorithms hold to it within 12% (or 5 requests, for
// the short intervals where a round trip counts) from 100 ms to 2 s, and the fixed
// window also at 5 s; no decision waits.
func TestGlobalSyncOverAdmissionFormula(t *testing.T) {
	const rate, limit = 50.0, 100
	for _, alg := range GlobalAlgorithms() {
		for _, n := range []int{2, 3, 10} {
			for _, sync := range []time.Duration{100 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 5 * time.Second} {
				if alg == "sliding-window" && sync > 2*time.Second {
					continue
				}
				c := Config{Nodes: n, Balancer: "round-robin", Placement: "global-sync", SyncTo: "store", Sync: sync,
					Latency: time.Millisecond, PeerLatency: time.Millisecond}
				f, res := driveFleet(t, c, alg, perMinute, 1, rate, 3*time.Minute)
				want := min(rate*sync.Seconds()*float64(n-1)/float64(n), float64((n-1)*limit))
				got := float64(res.EffectiveLimit - limit)
				if math.Abs(got-want) > max(5, 0.12*want) {
					t.Errorf("%s, %d nodes, sync %s: %+.0f over the limit, the formula %+.1f", alg, n, sync, got, want)
				}
				if res.AddedLatencyMaxMS != 0 || f.Designs().Syncs == 0 {
					t.Errorf("%s, %d nodes, sync %s: a decision waited %.2f ms, %d exchanges", alg, n, sync, res.AddedLatencyMaxMS, f.Designs().Syncs)
				}
			}
		}
	}
}

// One node sees every hit itself: its view is exact at any interval.
func TestGlobalSyncOneNodeIsExact(t *testing.T) {
	c := Config{Nodes: 1, Balancer: "round-robin", Placement: "global-sync", SyncTo: "store", Sync: 2 * time.Second, Latency: time.Millisecond}
	_, res := driveFleet(t, c, "fixed-window", perMinute, 3, 20, 3*time.Minute)
	if res.EffectiveLimit > 200 || res.NodePeakWindowAdmitted > 100 {
		t.Errorf("one node, effective %d node peak %d; want the fixed window's own figures", res.EffectiveLimit, res.NodePeakWindowAdmitted)
	}
}

// A partitioned node cannot send: it decides from its own hits alone, so it enforces the
// whole limit by itself and the fleet passes about one limit more per cut-off node.
func TestGlobalSyncPartitionedNodeDecidesAlone(t *testing.T) {
	c := Config{Nodes: 4, Balancer: "round-robin", Placement: "global-sync", SyncTo: "store", Sync: 100 * time.Millisecond,
		Outages: []Outage{{At: time.Minute, For: 2 * time.Minute, Policy: "fail-open", Nodes: 2}}}
	f, res := driveFleet(t, c, "fixed-window", perMinute, 1, 40, 4*time.Minute)
	if f.Designs().SyncFailures == 0 || res.OutageAdmitted == 0 {
		t.Fatalf("%d failed sends, %d outage admissions", f.Designs().SyncFailures, res.OutageAdmitted)
	}
	if res.EffectiveLimit < 250 || res.EffectiveLimit > 320 {
		t.Errorf("two of four nodes cut off: effective %d, want about three limits (each cut-off node one, the others one)", res.EffectiveLimit)
	}
	c.Outages = nil
	_, res = driveFleet(t, c, "fixed-window", perMinute, 1, 40, 4*time.Minute)
	if res.EffectiveLimit > 110 {
		t.Errorf("no partition: effective %d", res.EffectiveLimit)
	}
}

// The store target runs on plain commands, so the model and miniredis decide alike.
func TestGlobalSyncFacesAgree(t *testing.T) {
	c := Config{Nodes: 5, Balancer: "random", Placement: "global-sync", SyncTo: "store", Sync: 50 * time.Millisecond,
		Latency: time.Millisecond, Skew: 200 * time.Millisecond, Epoch: epoch, Prefix: "gs:"}
	run := func(st store.Store) string {
		p := algorithms.Policy{Limit: 20, Window: 2 * time.Second}
		f, err := New(c, "sliding-window", p, st, rand.New(rand.NewPCG(3, 4)))
		if err != nil {
			t.Fatal(err)
		}
		finish := metered(f, p)
		var out []byte
		for i := range 2000 {
			at := epoch + int64(i)*int64(3*time.Millisecond)
			k := uint32(i % 3)
			f.SetName(k, fmt.Sprintf("c%d", k))
			if f.Allow(k, at, 1).Allowed {
				out = append(out, '1')
			} else {
				out = append(out, '0')
			}
		}
		res, err := finish("v")
		if err != nil {
			t.Fatal(err)
		}
		res.Store = ""
		return fmt.Sprintf("%s %+v %+v", out, *res, f.Designs())
	}
	if model, onMini := onModelAndMiniredis(t, run); model != onMini {
		t.Errorf("model and miniredis differ:\n%s\n%s", model, onMini)
	}
}

// A hand case of Kong's redis policy with a sync_rate: two nodes, 3 per second (a fixed
// window), syncing every 100 ms, the client's requests alternating between them. Six
// requests within 10 ms, before either node has read the other's: each node admits its
// own three (A A A A A A, twice the limit: (N−1)·L more, the most the formula allows), and
// then refuses on its own count (R R). The next second both start again from a read of 0:
// six more. Synchronously (Kong's -1, sync 0s) the store counts each at once: A A A R R R.
func TestGlobalSyncKongHandCase(t *testing.T) {
	p := algorithms.Policy{Limit: 3, Window: time.Second}
	run := func(sync time.Duration, at ...int64) string {
		c := Config{Nodes: 2, Balancer: "round-robin", Placement: "global-sync", SyncTo: "store", Sync: sync, Epoch: epoch, Prefix: "k:"}
		f, err := New(c, "fixed-window", p, store.NewModel(), rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatal(err)
		}
		f.SetName(0, "consumer")
		var out []byte
		for _, ms := range at {
			if f.Allow(0, epoch+ms*int64(time.Millisecond), 1).Allowed {
				out = append(out, 'A')
			} else {
				out = append(out, 'R')
			}
		}
		return string(out)
	}
	if got := run(100*time.Millisecond, 10, 11, 12, 13, 14, 15, 16, 17, 200, 201, 1010, 1011, 1012, 1013, 1014, 1015, 1016); got != "AAAAAARRRRAAAAAAR" {
		t.Errorf("sync 100ms: %s, want AAAAAA RR RR AAAAAA R", got)
	}
	if got := run(0, 10, 11, 12, 13, 14, 15); got != "AAARRR" {
		t.Errorf("sync 0s: %s, want AAARRR", got)
	}
}

// The exchanges are counted against the timers: with the store each node makes one round
// trip a tick from its first request to its last, nodes × duration / sync in all,
// whatever the keys; with owners (Gubernator's GLOBAL) each node but the key's owner sends
// its hits once a wait (it has some every wait here) and the owner broadcasts the totals
// to the other nodes once a wait, about 2 × (nodes − 1) × duration / sync for one key.
func TestGlobalSyncExchangesFollowTheInterval(t *testing.T) {
	const d = time.Minute
	for _, to := range SyncTargets {
		for _, nodes := range []int{3, 10} {
			for _, sync := range []time.Duration{100 * time.Millisecond, time.Second} {
				c := Config{Nodes: nodes, Balancer: "round-robin", Placement: "global-sync", SyncTo: to, Sync: sync,
					Latency: time.Millisecond, PeerLatency: time.Millisecond}
				keys, perTick := 2, int64(nodes)
				if to == "owner" {
					keys, perTick = 1, 2*int64(nodes-1)
				}
				// Every node gets a request every 5 ms, so it has hits every tick.
				alg := algorithms.FixedWindowName
				if to == "owner" {
					alg = algorithms.TokenBucketName // Gubernator's TOKEN_BUCKET
				}
				f, _ := driveFleet(t, c, alg, perMinute, keys, float64(nodes*200/keys), d)
				ticks := int64(d / sync)
				lo, hi := perTick*(ticks-1), perTick*(ticks+1)
				if to == "owner" {
					// Gubernator's timers start at the first hit queued after a send, not on
					// a fixed tick: a cycle is the wait plus the gap to the next hit (≤ 5 ms)
					// and a hop.
					lo = perTick*int64(d/(sync+10*time.Millisecond)) - perTick
				}
				if got := f.Designs().Syncs; got < lo || got > hi {
					t.Errorf("to %s, %d nodes, sync %s over %s: %d exchanges, want %d to %d", to, nodes, sync, d, got, lo, hi)
				}
			}
		}
	}
}
