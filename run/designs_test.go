package run

import (
	"strings"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/cluster"
	"github.com/rlsim/rlsim/scenario"
)

const designsHead = `name: c
duration: 1m
policy: {limit: 10, window: 1m}
traffic:
  - script:
      - {at: 1s, count: 5, key: u}
`

// The designs' settings and faults reach the fleets: the cluster section's, a variant's
// overrides, partitions among the outages in time order, and the defaults.
func TestDesignsReachTheFleets(t *testing.T) {
	sc, err := scenario.Parse("c.yaml", []byte(designsHead+`cluster:
  placement: global-sync
  nodes: 4
  sync_to: store
  peer_latency: 2ms
  variants:
    - {name: plain}
    - {name: tuned, placement: owner, forward: direct, batch_wait: 1ms, sync: 0s, failover_lag: 3s, reshard_for: 0s}
faults:
  - partition: {at: 5s, for: 2s, nodes: 1}
  - outage: {at: 10s, for: 5s}
  - failover: {at: 20s, lag: 1s}
  - partition: {at: 30s, for: 5s, nodes: 2, policy: fail-open}
  - reshard: {at: 40s, for: 2s, fraction: 0.25}
`))
	if err != nil {
		t.Fatal(err)
	}
	vs := fleetVariants(sc, algorithms.Policy{Limit: 10, Window: time.Minute})
	plain, tuned := vs[0].cfg, vs[1].cfg
	if plain.Sync != cluster.DefaultSync || plain.SyncTo != "store" || plain.PeerLatency != 2*time.Millisecond || plain.Forward != "batched" {
		t.Errorf("plain: sync %s to %q, peer latency %s, forward %q", plain.Sync, plain.SyncTo, plain.PeerLatency, plain.Forward)
	}
	if len(plain.Outages) != 3 || plain.Outages[0].Nodes != 1 || plain.Outages[1].At != 10*time.Second || plain.Outages[1].Nodes != 0 ||
		plain.Outages[2].Nodes != 2 || plain.Outages[2].Policy != "fail-open" {
		t.Errorf("outages %+v, want the partition of a node at 5s, the outage at 10s, the partition of 2 nodes at 30s", plain.Outages)
	}
	if len(plain.Failovers) != 1 || plain.Failovers[0].Lag != time.Second || len(plain.Reshards) != 1 {
		t.Errorf("plain: failovers %+v, reshards %+v", plain.Failovers, plain.Reshards)
	}
	if tuned.Placement != "owner" || tuned.Forward != "direct" || tuned.BatchWait != time.Millisecond || tuned.Sync != 0 ||
		tuned.Failovers[0].Lag != 3*time.Second || tuned.Reshards != nil || plain.Failovers[0].Lag != time.Second {
		t.Errorf("tuned: %+v (and the base's failover lag %s)", tuned, plain.Failovers[0].Lag)
	}
	for _, v := range vs {
		if err := v.cfg.Validate(); err != nil {
			t.Errorf("%s: %v", v.name, err)
		}
	}
}

// Every built-in scenario of the designs runs: each of its variants gets rows.
func TestDesignBuiltinsRun(t *testing.T) {
	for _, name := range []string{"cluster-owner", "cluster-global-sync", "cluster-failover", "cluster-eviction", "cluster-partition", "cluster-placements"} {
		sc, err := scenario.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		if sc.Description == "" || strings.Contains(sc.Description, "\n") {
			t.Errorf("%s: want a one-line description", name)
		}
		rep, err := Run(sc, Options{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		seen := map[string]bool{}
		for _, x := range rep.Results {
			seen[x.Distributed.Variant] = true
		}
		if len(seen) != len(sc.Cluster.Variants) {
			t.Errorf("%s: rows for %d variants, the file has %d", name, len(seen), len(sc.Cluster.Variants))
		}
	}
}

// membership_over_admission divides by the same fleet without the change: a client under
// its limit passes the same after a scale-out as without one (1.00), a moved key over its
// limit passes more (above 1), and a token bucket's burst and refill, which it has with or
// without the change, are not charged to the change (below the raw 2× of its effective
// limit). Placements without owners to move have none.
func TestMembershipOverAdmissionAgainstNoChange(t *testing.T) {
	sc, err := scenario.Parse("m.yaml", []byte(`name: m
duration: 3m
policy: {limit: 100, window: 1m}
algorithms: [sliding-log, token-bucket]
cluster:
  placement: owner
  forward: direct
  nodes: 4
  scale: [{at: 90s, nodes: 8}]
  variants:
    - {name: owner}
    - {name: gubernator, placement: global-sync, sync_to: owner, sync: 100ms}
    - {name: local, placement: local}
traffic:
  - poisson: {rate: 50, keys: 20, key_prefix: heavy_, end: 3m}
  - poisson: {rate: 1, keys: 1, key_prefix: calm_, end: 3m}
`))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(sc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	calm, err := scenario.Parse("c.yaml", []byte(strings.Replace(string(sc.Text), "rate: 50, keys: 20, key_prefix: heavy_", "rate: 1, keys: 1, key_prefix: also_calm_", 1)))
	if err != nil {
		t.Fatal(err)
	}
	calmRep, err := Run(calm, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range append(rep.Results, calmRep.Results...) {
		d := x.Distributed
		moving := d.Placement == "owner" || d.SyncTo == "owner"
		t.Logf("%s %s: effective %d, after the change %.3f", x.Algorithm, d.Variant, d.EffectiveLimit, d.MembershipOverAdmission)
		switch {
		case !moving && d.MembershipOverAdmission != 0:
			t.Errorf("%s@%s: %.3f; no owners move in a %s fleet", x.Algorithm, d.Variant, d.MembershipOverAdmission, d.Placement)
		case !moving:
		case d.EffectiveLimit <= 100:
			if d.MembershipOverAdmission != 1 {
				t.Errorf("%s@%s: under the limit throughout (%d), yet %.3f after the change; want 1", x.Algorithm, d.Variant, d.EffectiveLimit, d.MembershipOverAdmission)
			}
		case x.Algorithm == "sliding-log" && d.MembershipOverAdmission <= 1:
			t.Errorf("%s@%s: %.3f after the change; a moved key over its limit passes more", x.Algorithm, d.Variant, d.MembershipOverAdmission)
		case x.Algorithm == "token-bucket" && d.Placement == "owner" &&
			(d.MembershipOverAdmission <= 1 || d.MembershipOverAdmission >= float64(d.EffectiveLimit)/100):
			t.Errorf("%s@%s: %.3f after the change, want above 1 and below the raw %.2f", x.Algorithm, d.Variant, d.MembershipOverAdmission, float64(d.EffectiveLimit)/100)
		}
	}
}

// Gubernator's knobs and Kong's minimum in the scenario format: global_batch_limit and
// behaviors reach the fleet, a variant may replace the behaviours, and an interval to the
// store below 20 ms, or an unknown behaviour, is refused with its field.
func TestGubernatorAndKongKnobs(t *testing.T) {
	sc, err := scenario.Parse("g.yaml", []byte(designsHead+`cluster:
  placement: global-sync
  nodes: 3
  global_batch_limit: 50
  behaviors: [DRAIN_OVER_LIMIT]
  variants:
    - {name: drain}
    - {name: plain, behaviors: []}
    - {name: kong, sync_to: store, sync: 20ms}
`))
	if err != nil {
		t.Fatal(err)
	}
	vs := fleetVariants(sc, algorithms.Policy{Limit: 10, Window: time.Minute})
	if c := vs[0].cfg; c.GlobalBatchLimit != 50 || len(c.Behaviors) != 1 || c.Sync != 100*time.Millisecond || c.SyncTo != "owner" {
		t.Errorf("drain: %+v", c)
	}
	if c := vs[1].cfg; len(c.Behaviors) != 0 {
		t.Errorf("plain: behaviours %v, want none", c.Behaviors)
	}
	for _, bad := range []struct{ yaml, want string }{
		{"cluster:\n  placement: global-sync\n  sync_to: store\n  sync: 10ms\n", "cluster.sync: 10ms is below the 20ms Kong accepts"},
		{"cluster:\n  placement: global-sync\n  variants:\n    - {name: v, sync_to: store, sync: 5ms}\n", "cluster.variants[0].sync: 5ms is below the 20ms Kong accepts"},
		{"cluster:\n  placement: global-sync\n  behaviors: [GLOBAL]\n", `cluster.behaviors[0]: unknown behaviour "GLOBAL"`},
		{"cluster:\n  placement: global-sync\n  global_batch_limit: 5000\n", "cluster.global_batch_limit: must be between 1 and 1000"},
	} {
		if _, err := scenario.Parse("b.yaml", []byte(designsHead+bad.yaml)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: %v, want %q", bad.yaml, err, bad.want)
		}
	}
}
