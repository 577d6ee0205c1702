package cluster

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/store"
)

// The ring gives every node a share of the keys near 1/N, the same owner to the same
// membership, and moves about 1/(N+1) of the keys when one node joins — those to the new
// node only.
func TestRingSpreadsAndMovesFewKeys(t *testing.T) {
	r := newRing(DefaultVNodes)
	r.resize(10)
	const keys = 20000
	owners := make([]int, keys)
	count := make([]int, 10)
	for k := range keys {
		owners[k] = r.owner(fmt.Sprintf("user_%d", k))
		count[owners[k]]++
	}
	for i, n := range count {
		if math.Abs(float64(n)/keys-0.1) > 0.02 {
			t.Errorf("node %d owns %d of %d keys, want about a tenth", i, n, keys)
		}
	}
	again := newRing(DefaultVNodes)
	again.resize(4)
	again.resize(10)
	r.resize(11)
	moved := 0
	for k := range keys {
		name := fmt.Sprintf("user_%d", k)
		if again.owner(name) != owners[k] {
			t.Fatalf("%s: a ring grown 4 → 10 gives owner %d, one built at 10 gives %d", name, again.owner(name), owners[k])
		}
		if now := r.owner(name); now != owners[k] {
			moved++
			if now != 10 {
				t.Fatalf("%s moved from %d to %d, not to the node that joined", name, owners[k], now)
			}
		}
	}
	if f := float64(moved) / keys; math.Abs(f-1.0/11) > 0.02 {
		t.Errorf("%.3f of the keys moved when an 11th node joined, want about 1/11", f)
	}
	r.resize(10)
	for k := range keys {
		if got := r.owner(fmt.Sprintf("user_%d", k)); got != owners[k] {
			t.Fatalf("after the 11th node left, user_%d is on %d, was on %d", k, got, owners[k])
		}
	}
}

// One owner per key, no store: the fleet holds a flood to the limit exactly, and (N−1)/N of
// the decisions of a client spread round-robin take one hop each.
func TestOwnerHoldsTheLimitWithOneHop(t *testing.T) {
	c := Config{Nodes: 10, Balancer: "round-robin", Placement: "owner", Forward: "direct", PeerLatency: time.Millisecond}
	f, res := driveFleet(t, c, "sliding-log", perMinute, 1, 50, 3*time.Minute)
	d := f.Designs()
	if res.EffectiveLimit != 100 {
		t.Errorf("effective limit %d, want 100", res.EffectiveLimit)
	}
	if d.PeerHops != 0.9 || d.PeerMessages != 0.9 {
		t.Errorf("%.3f hops and %.3f peer requests a decision, want 0.9 each", d.PeerHops, d.PeerMessages)
	}
	if res.AddedLatencyP50MS != 1 || res.StoreRoundTrips != 0 {
		t.Errorf("p50 %.2f ms, %.3f store round trips; want one peer round trip, no store", res.AddedLatencyP50MS, res.StoreRoundTrips)
	}
	c.Nodes = 1
	_, res = driveFleet(t, c, "sliding-log", perMinute, 1, 50, time.Minute)
	if res.AddedLatencyMaxMS != 0 {
		t.Errorf("one node forwards nothing, yet a decision waited %.2f ms", res.AddedLatencyMaxMS)
	}
}

// Batching: forwarded requests from one node to one owner within BatchWait share a peer
// request, so a flood makes far fewer peer requests than hops, and each waits for its
// batch to leave on top of the round trip.
func TestOwnerBatchesForwardedRequests(t *testing.T) {
	c := Config{Nodes: 4, Balancer: "round-robin", Placement: "owner", PeerLatency: time.Millisecond}
	f, res := driveFleet(t, c, "fixed-window", algorithms.Policy{Limit: 100000, Window: time.Minute}, 1, 20000, 5*time.Second)
	d := f.Designs()
	if d.PeerHops != 0.75 {
		t.Errorf("%.3f hops a decision, want 0.75", d.PeerHops)
	}
	// 20000 a second, three quarters forwarded, each node's batch collects 500µs of its
	// quarter: about 2.5 requests a batch.
	if d.PeerMessages > d.PeerHops/2 || d.PeerMessages == 0 {
		t.Errorf("%.3f peer requests a decision against %.3f hops: batching did not batch", d.PeerMessages, d.PeerHops)
	}
	if res.AddedLatencyMaxMS != 1.5 || res.AddedLatencyP50MS < 1 {
		t.Errorf("added latency p50 %.2f max %.2f ms, want up to the 0.5 ms window plus the 1 ms round trip", res.AddedLatencyP50MS, res.AddedLatencyMaxMS)
	}
	c.Forward = "direct"
	f, _ = driveFleet(t, c, "fixed-window", algorithms.Policy{Limit: 100000, Window: time.Minute}, 1, 20000, 5*time.Second)
	if d := f.Designs(); d.PeerMessages != d.PeerHops {
		t.Errorf("direct: %.3f peer requests against %.3f hops, want one each", d.PeerMessages, d.PeerHops)
	}
}

// Membership: scaling out moves keys to new owners that start empty, so a client whose key
// moved gets a second window's worth; a client whose key stayed does not. Without the
// change every client holds to the limit.
func TestOwnerMembershipChangeStartsNewOwnersEmpty(t *testing.T) {
	c := Config{Nodes: 4, Balancer: "round-robin", Placement: "owner", Scale: []Scale{{At: 90 * time.Second, Nodes: 8}}}
	f, res := driveFleet(t, c, "sliding-log", perMinute, 40, 5, 3*time.Minute)
	d := f.Designs()
	if d.MembershipChanges != 1 || d.OwnershipMoves == 0 || d.OwnershipMoves == 40 {
		t.Fatalf("%d changes moved %d of 40 keys, want one change moving some", d.MembershipChanges, d.OwnershipMoves)
	}
	if res.EffectiveLimit <= 100 || res.MembershipOverAdmission <= 1 {
		t.Errorf("effective %d, %.2f× the limit around the change: the new owners did not start empty", res.EffectiveLimit, res.MembershipOverAdmission)
	}
	c.Scale = nil
	f, res = driveFleet(t, c, "sliding-log", perMinute, 40, 5, 3*time.Minute)
	if res.EffectiveLimit != 100 || f.Designs().OwnershipMoves != 0 {
		t.Errorf("no change: effective %d, %d moves; want 100 and none", res.EffectiveLimit, f.Designs().OwnershipMoves)
	}
}

// A partition cuts the first nodes off from their peers: their forwards, and forwards to
// the keys they own, wait the timeout and follow the outage policy; keys they own they
// still decide.
func TestOwnerPartition(t *testing.T) {
	c := Config{Nodes: 4, Balancer: "round-robin", Placement: "owner", Forward: "direct",
		Outages: []Outage{{At: time.Minute, For: time.Minute, Policy: "fail-open", Nodes: 1}}}
	_, res := driveFleet(t, c, "sliding-log", perMinute, 20, 5, 3*time.Minute)
	if res.OutageAdmitted == 0 || res.OutageRefused != 0 || res.StoreTimeouts != res.OutageAdmitted {
		t.Errorf("outage admitted %d refused %d, %d timeouts: want cut-off forwards admitted (fail-open) after a timeout each", res.OutageAdmitted, res.OutageRefused, res.StoreTimeouts)
	}
	if res.EffectiveLimit <= 100 || res.Alerts == 0 {
		t.Errorf("fail-open partition: effective %d, %d alerts; want over the limit and an alert", res.EffectiveLimit, res.Alerts)
	}
	c.Outages[0].Policy = "fail-closed"
	_, res = driveFleet(t, c, "sliding-log", perMinute, 20, 5, 3*time.Minute)
	if res.EffectiveLimit != 100 || res.OutageRefused == 0 {
		t.Errorf("fail-closed partition: effective %d, %d refused; want 100 and refusals", res.EffectiveLimit, res.OutageRefused)
	}
}

// driveFleet is drive that also returns the fleet, for its design figures.
func driveFleet(t *testing.T, c Config, alg string, p algorithms.Policy, clients int, rate float64, d time.Duration) (*Fleet, *report.Distributed) {
	t.Helper()
	c.Epoch = epoch
	if c.Prefix == "" {
		c.Prefix = "rl:"
	}
	f, err := New(c, alg, p, store.NewModel(), rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	finish := metered(f, p)
	for k := range clients {
		f.SetName(uint32(k), fmt.Sprintf("user_%d", k))
	}
	step := time.Duration(float64(time.Second) / rate)
	for at := time.Duration(0); at < d; at += step {
		for k := range clients {
			f.Allow(uint32(k), epoch+int64(at), 1)
		}
	}
	res, err := finish("test")
	if err != nil {
		t.Fatal(err)
	}
	return f, res
}

// A key hashed above the ring's last point belongs to the owner of its first point: the
// circle wraps round. Each key's owner is checked against a scan of the points, on rings
// of several sizes, and at least a few keys of each lie beyond the last point.
func TestRingWrapsRoundToTheFirstPoint(t *testing.T) {
	for _, tt := range []struct{ vnodes, nodes int }{{1, 3}, {4, 5}, {DefaultVNodes, 10}} {
		r := newRing(tt.vnodes)
		r.resize(tt.nodes)
		last := r.points[len(r.points)-1].hash
		beyond := 0
		for k := range 60000 {
			name := fmt.Sprintf("user_%d", k)
			h := hash64(name)
			want := r.points[0].node
			if h > last {
				beyond++
			} else {
				for _, p := range r.points {
					if p.hash >= h {
						want = p.node
						break
					}
				}
			}
			if got := r.owner(name); got != want {
				t.Fatalf("%d nodes × %d points: %s (hash %#x, last point %#x) owned by node %d, want %d", tt.nodes, tt.vnodes, name, h, last, got, want)
			}
		}
		if beyond < 3 {
			t.Errorf("%d nodes × %d points: %d keys beyond the last point, want a few to check the wrap", tt.nodes, tt.vnodes, beyond)
		}
	}
}
