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
