package cluster

import (
	"fmt"
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
