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

// A slot move moves the keys of one call together: the two counters of the two-counter
// window share their client key's hash tag, so for every client either both are on the
// move or neither, whatever share of the slots moves.
func TestReshardMovesACallsKeysTogether(t *testing.T) {
	lim, err := store.NewLimiter(store.NewModel(), "sliding-window", perMinute, "rl:")
	if err != nil {
		t.Fatal(err)
	}
	s := newReplicatedStore(store.NewModel(), Config{Epoch: epoch, Reshards: []Reshard{{At: 0, For: time.Minute, Fraction: 0.5}}})
	s.now = epoch
	moved := 0
	for i := range 2000 {
		keys := s.names(lim.Keys(fmt.Sprintf("user_%d", i), epoch+int64(i)*int64(time.Second)), 0)
		a, b := strings.HasSuffix(keys[0], "#m0"), strings.HasSuffix(keys[1], "#m0")
		if a != b {
			t.Fatalf("client user_%d: %q and %q, one on the move without the other", i, keys[0], keys[1])
		}
		if a {
			moved++
		}
	}
	if moved < 800 || moved > 1200 {
		t.Errorf("%d of 2000 clients on the move with half the slots moving", moved)
	}
}

// A failover with a replica 2 s behind loses the 19 admissions the primary counted in the
// 2 s before it (a client at 10 a second; the request at the failover's instant already
// reaches the new primary): the exact log, short of them, lets the client pass 19 more in
// the window — 119 where 100 was advertised — 19 more than a store that lost nothing
// admits of the same requests. A replica that keeps up loses nothing.
func TestFailoverLosesTheLagsWrites(t *testing.T) {
	c := Config{Nodes: 5, Balancer: "round-robin", Placement: "shared", Failovers: []Failover{{At: 65 * time.Second, Lag: 2 * time.Second}}}
	f, res := driveFleet(t, c, "sliding-log", perMinute, 1, 10, 3*time.Minute)
	d := f.Designs()
	if d.LostWrites != 19 || d.FreePasses != 19 || d.FreePassKeys != 1 {
		t.Errorf("lag 2 s: %d lost writes, %d free passes to %d keys; want 19, 19, 1", d.LostWrites, d.FreePasses, d.FreePassKeys)
	}
	if res.EffectiveLimit != 119 || res.FailoverOverAdmission != 1.19 {
		t.Errorf("lag 2 s: effective %d, %.2f× after the failover; want 119 and 1.19", res.EffectiveLimit, res.FailoverOverAdmission)
	}
	c.Failovers[0].Lag = 0
	f, res = driveFleet(t, c, "sliding-log", perMinute, 1, 10, 3*time.Minute)
	if d := f.Designs(); d.LostWrites != 0 || d.FreePasses != 0 || res.EffectiveLimit != 100 {
		t.Errorf("lag 0: %d lost, %d free passes, effective %d; want 0, 0, 100", d.LostWrites, d.FreePasses, res.EffectiveLimit)
	}
}

// Two failovers: the second replica starts as a full copy of the first new primary, so
// each failover loses only the writes of its own lag: 9 at the first (64.1 s to 64.9 s);
// at the second the client, whose log lacks those 9 and so frees no room for them, is
// admitted from 120 s to 124 s only, of which the 20 after 122 s are lost.
func TestTwoFailoversLoseEachTheirLag(t *testing.T) {
	c := Config{Nodes: 3, Balancer: "round-robin", Placement: "shared",
		Failovers: []Failover{{At: 65 * time.Second, Lag: time.Second}, {At: 125 * time.Second, Lag: 3 * time.Second}}}
	f, _ := driveFleet(t, c, "sliding-log", perMinute, 1, 10, 3*time.Minute)
	if d := f.Designs(); d.LostWrites != 9+20 || d.FreePasses != 9+20 {
		t.Errorf("lags 1 s and 3 s: %d lost writes, %d free passes; want 9 + 20 each", d.LostWrites, d.FreePasses)
	}
}

// A slot move: while the client's key is on the move it reads empty, so the client passes
// again what it had spent; once the move completes its old count is back and what it
// passed meanwhile is forgotten.
func TestReshardReadsMovingKeysEmpty(t *testing.T) {
	c := Config{Nodes: 2, Balancer: "round-robin", Placement: "shared", Reshards: []Reshard{{At: 65 * time.Second, For: time.Second, Fraction: 1}}}
	f, res := driveFleet(t, c, "sliding-log", perMinute, 1, 50, 3*time.Minute)
	d := f.Designs()
	if d.FreePasses != 50 || res.EffectiveLimit != 150 {
		t.Errorf("every slot moving for 1 s at 50/s: %d free passes, effective %d; want 50 and 150", d.FreePasses, res.EffectiveLimit)
	}
	c.Reshards[0].Fraction = 1.0 / store.Slots // one slot: not this key's, most likely
	f, res = driveFleet(t, c, "sliding-log", perMinute, 1, 50, 3*time.Minute)
	if d := f.Designs(); d.FreePasses != 0 || res.EffectiveLimit != 100 {
		t.Errorf("one slot moving: %d free passes, effective %d; want none and 100", d.FreePasses, res.EffectiveLimit)
	}
}

// Failovers and moves rename keys on the store, so the figures are those of the face:
// the model and miniredis agree on every placement that uses the store.
func TestFailoverFacesAgree(t *testing.T) {
	for _, placement := range []string{"shared", "two-tier", "leased", "shared-nonatomic", "shared-racy", "global-sync"} {
		alg := "gcra"
		if placement == "global-sync" {
			alg = "sliding-window"
		}
		c := Config{Nodes: 4, Balancer: "random", Placement: placement, SyncTo: "store", Sync: 20 * time.Millisecond,
			Latency: time.Millisecond, Epoch: epoch, Prefix: "fo:", CrashProbability: 0.05,
			Failovers: []Failover{{At: 3 * time.Second, Lag: 300 * time.Millisecond}},
			Reshards:  []Reshard{{At: 4 * time.Second, For: 500 * time.Millisecond, Fraction: 0.5}}}
		run := func(st store.Store) string {
			p := algorithms.Policy{Limit: 20, Window: 2 * time.Second}
			f, err := New(c, alg, p, st, rand.New(rand.NewPCG(5, 6)))
			if err != nil {
				t.Fatal(err)
			}
			finish := metered(f, p)
			var out []byte
			for i := range 1200 {
				k := uint32(i % 4)
				f.SetName(k, fmt.Sprintf("c%d", k))
				if f.Allow(k, epoch+int64(i)*int64(5*time.Millisecond), 1).Allowed {
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
			t.Errorf("%s: model and miniredis differ:\n%s\n%s", placement, model, onMini)
		}
	}
}
