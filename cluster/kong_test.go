package cluster

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/store"
)

// TestKongSharedFleetDecidesAsOneNode: on the shared placement, a fleet of Kong with
// policy=redis shares its counters in the store, so ten nodes with true clocks decide as
// one node of the plugin does, request for request, each decision taking one round trip
// per configured period; the same spec with policy=local has no shared form, nor has Kong
// on the two-tier placement, whose guard is a share of the policy.
func TestKongSharedFleetDecidesAsOneNode(t *testing.T) {
	const spec = "kong:second=4 minute=30 hour=2000 policy=redis"
	p := algorithms.Policy{Limit: 30, Window: time.Minute}
	c := Config{Nodes: 10, Balancer: "round-robin", Placement: "shared"}
	algs := []string{"kong:second=4 minute=30", spec, algorithms.FixedWindowName}
	if got, want := c.Runs(algs), []string{spec, algorithms.FixedWindowName}; !slices.Equal(got, want) {
		t.Fatalf("shared runs %q, want %q", got, want)
	}
	if got := (&Config{Placement: "two-tier"}).Runs(algs); !slices.Equal(got, []string{algorithms.FixedWindowName}) {
		t.Fatalf("two-tier runs %q, want fixed-window alone", got)
	}
	f, err := New(c, spec, p, store.NewModel(), rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	for key := range uint32(3) {
		f.SetName(key, fmt.Sprintf("user_%d", key))
	}
	trips := 0
	f.Observe(func(o *Observation) { trips = o.RoundTrips })
	one, err := algorithms.New(spec, p)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	now := time.Date(2026, 1, 1, 10, 59, 0, 0, time.UTC).UnixNano()
	admitted, refused := 0, 0
	for i := range 20000 {
		now += rng.Int64N(int64(400 * time.Millisecond))
		key := rng.Uint32N(3)
		got, want := f.Allow(key, now, 1), one.Allow(key, now, 1)
		if got.Allowed != want.Allowed || got.Remaining != want.Remaining || trips != 3 {
			t.Fatalf("request %d (key %d at %s): fleet %+v in %d round trips, one node %+v", i, key, time.Unix(0, now).UTC().Format(time.RFC3339Nano), got, trips, want)
		}
		if got.Allowed {
			admitted++
		} else {
			refused++
		}
	}
	if admitted < 1000 || refused < 1000 {
		t.Fatalf("%d admitted, %d refused: the traffic proves little", admitted, refused)
	}
	keys, err := f.st.Keys("")
	if err != nil {
		t.Fatal(err)
	}
	periods := map[string]bool{}
	for _, k := range keys {
		for _, per := range []string{"second", "minute", "hour"} {
			periods[per] = periods[per] || strings.Contains(k.Name, "}:kong:"+per+":")
		}
	}
	if !periods["second"] || !periods["minute"] || !periods["hour"] {
		t.Errorf("the store holds counters of %v; want one per period (%v)", periods, keys)
	}
}

// TestKongGlobalSyncOverAdmission: Kong with policy=redis and a sync_rate on the
// global-sync placement with the store target over-admits, on the period whose limit
// binds, about r·S·(N−1)/N beyond it (globalSync's formula, as for the fixed window), with
// a shorter period that does not bind counted alongside; one node sees every hit itself.
func TestKongGlobalSyncOverAdmission(t *testing.T) {
	const rate, limit = 50.0, 100
	for _, spec := range []string{"kong:minute=100 policy=redis", "kong:second=100 minute=100 hour=100000 policy=redis"} {
		for _, n := range []int{1, 2, 3, 10} {
			for _, sync := range []time.Duration{100 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 5 * time.Second} {
				c := Config{Nodes: n, Balancer: "round-robin", Placement: "global-sync", SyncTo: "store", Sync: sync,
					Latency: time.Millisecond, PeerLatency: time.Millisecond}
				if got := c.Runs([]string{spec, "kong:minute=100"}); !slices.Equal(got, []string{spec}) {
					t.Fatalf("global-sync to the store runs %q; want %q alone", got, spec)
				}
				f, res := driveFleet(t, c, spec, perMinute, 1, rate, 3*time.Minute)
				want := min(rate*sync.Seconds()*float64(n-1)/float64(n), float64((n-1)*limit))
				got := float64(res.EffectiveLimit - limit)
				if math.Abs(got-want) > max(5, 0.12*want) {
					t.Errorf("%s, %d nodes, sync %s: %+.0f over the limit, the formula %+.1f", spec, n, sync, got, want)
				}
				if f.Designs().Syncs == 0 {
					t.Errorf("%s, %d nodes, sync %s: no exchange with the store", spec, n, sync)
				}
			}
		}
	}
}

// TestKongGlobalSyncZeroIsShared: sync 0 is Kong's sync_rate −1: every request counted on
// every period at once, so the fleet decides as the shared placement's and one node's
// policy=redis, request for request, one round trip per period.
func TestKongGlobalSyncZeroIsShared(t *testing.T) {
	const spec = "kong:second=4 minute=30 hour=2000 policy=redis"
	p := algorithms.Policy{Limit: 30, Window: time.Minute}
	var fleets []*Fleet
	for _, c := range []Config{
		{Nodes: 5, Balancer: "round-robin", Placement: "global-sync", SyncTo: "store"},
		{Nodes: 5, Balancer: "round-robin", Placement: "shared"},
	} {
		f, err := New(c, spec, p, store.NewModel(), rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatal(err)
		}
		for key := range uint32(3) {
			f.SetName(key, fmt.Sprintf("user_%d", key))
		}
		fleets = append(fleets, f)
	}
	trips := 0
	fleets[0].Observe(func(o *Observation) { trips = o.RoundTrips })
	one, _ := algorithms.New(spec, p)
	rng := rand.New(rand.NewPCG(5, 6))
	now := time.Date(2026, 1, 1, 10, 59, 0, 0, time.UTC).UnixNano()
	refused := 0
	for i := range 5000 {
		now += rng.Int64N(int64(400 * time.Millisecond))
		key := rng.Uint32N(3)
		want := one.Allow(key, now, 1)
		for j, f := range fleets {
			if got := f.Allow(key, now, 1); got.Allowed != want.Allowed || got.Remaining != want.Remaining || (j == 0 && trips != 3) {
				t.Fatalf("request %d, fleet %d: %+v (%d round trips), one node %+v", i, j, got, trips, want)
			}
		}
		if !want.Allowed {
			refused++
		}
	}
	if refused < 500 {
		t.Fatalf("%d refused: the traffic proves little", refused)
	}
}

// TestKongGlobalSyncHandCase: globalSync's hand case with two of Kong's periods,
// second=3 minute=5, on two nodes syncing every 100 ms: before either has read the
// other's, each admits its own three (six in the second, six in the minute); after the
// sync both refuse, and in the next second the minute, read at six, refuses everything.
func TestKongGlobalSyncHandCase(t *testing.T) {
	c := Config{Nodes: 2, Balancer: "round-robin", Placement: "global-sync", SyncTo: "store", Sync: 100 * time.Millisecond, Epoch: epoch, Prefix: "k:"}
	f, err := New(c, "kong:second=3 minute=5 policy=redis", algorithms.Policy{Limit: 5, Window: time.Minute}, store.NewModel(), rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	f.SetName(0, "consumer")
	var out []byte
	for _, ms := range []int64{10, 11, 12, 13, 14, 15, 16, 17, 200, 201, 1010, 1011, 1012} {
		if f.Allow(0, epoch+ms*int64(time.Millisecond), 1).Allowed {
			out = append(out, 'A')
		} else {
			out = append(out, 'R')
		}
	}
	if got := string(out); got != "AAAAAARRRRRRR" {
		t.Errorf("%s, want AAAAAA RR RR RRR", got)
	}
}

// TestKongFailoverFreePasses: Kong's counters lose a lagging replica's writes as a
// script's do, and the shadow, Kong's counters on a store that loses nothing, counts what
// the loss let through: a client at 10 a second against minute=100 passes the 19 requests
// the 2 s of lag forgot, and nothing without lag.
func TestKongFailoverFreePasses(t *testing.T) {
	const spec = "kong:minute=100 policy=redis"
	c := Config{Nodes: 5, Balancer: "round-robin", Placement: "shared", Failovers: []Failover{{At: 65 * time.Second, Lag: 2 * time.Second}}}
	f, res := driveFleet(t, c, spec, perMinute, 1, 10, 3*time.Minute)
	if d := f.Designs(); d.FreePasses != 19 || d.FreePassKeys != 1 || res.EffectiveLimit != 119 {
		t.Errorf("lag 2 s: %d free passes to %d keys, effective %d; want 19 to 1, 119", d.FreePasses, d.FreePassKeys, res.EffectiveLimit)
	}
	c.Failovers[0].Lag = 0
	f, res = driveFleet(t, c, spec, perMinute, 1, 10, 3*time.Minute)
	if d := f.Designs(); d.FreePasses != 0 || res.EffectiveLimit != 100 {
		t.Errorf("lag 0: %d free passes, effective %d; want 0, 100", d.FreePasses, res.EffectiveLimit)
	}
}
