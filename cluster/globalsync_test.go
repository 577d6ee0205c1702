package cluster

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/store"
)

// Sync 0 is synchronous: every decision reads the totals and counts its hit, so the fleet
// holds the limit; through the store that is one round trip a decision, through the
// owners one hop for the decisions another node owns.
func TestGlobalSyncZeroIsExact(t *testing.T) {
	for _, to := range SyncTargets {
		for _, alg := range GlobalAlgorithms {
			c := Config{Nodes: 10, Balancer: "round-robin", Placement: "global-sync", SyncTo: to, Latency: time.Millisecond, PeerLatency: time.Millisecond}
			f, res := driveFleet(t, c, alg, perMinute, 1, 50, 3*time.Minute)
			if res.EffectiveLimit > 100 {
				t.Errorf("%s to %s, sync 0: effective %d, want at most 100", alg, to, res.EffectiveLimit)
			}
			d := f.Designs()
			switch to {
			case "store":
				if res.StoreRoundTrips != 1 || res.AddedLatencyP50MS != 1 {
					t.Errorf("%s to the store, sync 0: %.3f round trips, p50 %.2f ms; want 1 and 1", alg, res.StoreRoundTrips, res.AddedLatencyP50MS)
				}
			case "owner":
				if d.PeerHops != 0.9 || res.StoreRoundTrips != 0 {
					t.Errorf("%s to owners, sync 0: %.3f hops, %.3f store round trips; want 0.9 and none", alg, d.PeerHops, res.StoreRoundTrips)
				}
			}
		}
	}
}

// Deciding from a view synced every S lets the fleet admit what the other nodes admitted
// and the node has not read: their hits wait up to S to be sent, and its read is up to S
// and a round trip old, so more the longer S, within the limit plus the rate times 2S
// plus the round trip; and nothing a decision waits for.
func TestGlobalSyncOverAdmissionGrowsWithTheInterval(t *testing.T) {
	const rate = 50.0 // one client, per second, over 10 nodes
	for _, to := range SyncTargets {
		prev := int64(0)
		for _, sync := range []time.Duration{10 * time.Millisecond, 200 * time.Millisecond, time.Second, 5 * time.Second} {
			c := Config{Nodes: 10, Balancer: "round-robin", Placement: "global-sync", SyncTo: to, Sync: sync,
				Latency: time.Millisecond, PeerLatency: time.Millisecond}
			f, res := driveFleet(t, c, "sliding-window", perMinute, 1, rate, 3*time.Minute)
			bound := 100 + int64(rate*(2*sync+time.Millisecond).Seconds()) + 1
			if res.EffectiveLimit > bound || res.EffectiveLimit < prev {
				t.Errorf("to %s, sync %s: effective %d, want between %d (the shorter interval's) and %d", to, sync, res.EffectiveLimit, prev, bound)
			}
			if res.AddedLatencyMaxMS != 0 {
				t.Errorf("to %s, sync %s: a decision waited %.2f ms", to, sync, res.AddedLatencyMaxMS)
			}
			if f.Designs().Syncs == 0 {
				t.Errorf("to %s, sync %s: no exchange", to, sync)
			}
			prev = res.EffectiveLimit
		}
		if prev <= 150 {
			t.Errorf("to %s, sync 5s: effective %d; 10 nodes deciding alone for 5 s at 50/s should pass far more", to, prev)
		}
	}
}

// One node sees every hit itself: its view is exact at any interval.
func TestGlobalSyncOneNodeIsExact(t *testing.T) {
	for _, to := range SyncTargets {
		c := Config{Nodes: 1, Balancer: "round-robin", Placement: "global-sync", SyncTo: to, Sync: 2 * time.Second, Latency: time.Millisecond}
		_, res := driveFleet(t, c, "fixed-window", perMinute, 3, 20, 3*time.Minute)
		if res.EffectiveLimit > 200 || res.NodePeakWindowAdmitted > 100 {
			t.Errorf("to %s: one node, effective %d node peak %d; want the fixed window's own figures", to, res.EffectiveLimit, res.NodePeakWindowAdmitted)
		}
		if to == "owner" && res.StoreRoundTrips != 0 {
			t.Errorf("to the owner: %.3f store round trips", res.StoreRoundTrips)
		}
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

// The exchanges are counted against the timers: with the store each node makes one round
// trip a tick from its first request to its last, nodes × duration / sync in all,
// whatever the keys; with owners each node but the key's owner sends its hits once a
// tick (it has some every tick here) and the owner broadcasts the totals to the other
// nodes once a tick, 2 × (nodes − 1) × duration / sync for one key.
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
				f, _ := driveFleet(t, c, "fixed-window", perMinute, keys, float64(nodes*200/keys), d)
				ticks := int64(d / sync)
				lo, hi := perTick*(ticks-1), perTick*(ticks+1)
				if got := f.Designs().Syncs; got < lo || got > hi {
					t.Errorf("to %s, %d nodes, sync %s over %s: %d exchanges, want %d to %d", to, nodes, sync, d, got, lo, hi)
				}
			}
		}
	}
}
