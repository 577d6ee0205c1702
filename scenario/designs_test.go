package scenario

import (
	"strings"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/cluster"
)

// Every mistake in the designs' settings and faults names its file, line, column and
// field, on one line.
func TestBadDesignSectionsNamePositionAndField(t *testing.T) {
	tests := []struct{ tail, want string }{
		{"cluster: {placement: owner, forward: carrier-pigeon}\n", `c.yaml:7:38: cluster.forward: unknown way "carrier-pigeon" (want one of direct, batched)`},
		{"cluster: {placement: global-sync, sync_to: cloud}\n", `c.yaml:7:44: cluster.sync_to: unknown target "cloud" (want one of owner, store)`},
		{"cluster: {placement: global-sync, sync: -1s}\n", "c.yaml:7:41: cluster.sync: must not be negative"},
		{"cluster: {placement: owner, batch_wait: -1ms}\n", "cluster.batch_wait: must not be negative"},
		{"cluster: {placement: owner, peer_latency: -1ms}\n", "cluster.peer_latency: must not be negative"},
		{"cluster: {placement: owner, vnodes: 5000}\n", "c.yaml:7:37: cluster.vnodes: must be between 0 and 4096, got 5000"},
		{"cluster: {placement: owner, batch_limit: -2}\n", "cluster.batch_limit: must not be negative, got -2"},
		{"cluster: {variants: [{name: a, sync: soon}]}\n", "cluster.variants[0].sync"},
		{"cluster: {variants: [{name: a, sync_to: moon}]}\n", `cluster.variants[0].sync_to: unknown target "moon"`},
		{"cluster: {variants: [{name: a, failover_lag: -1s}]}\n", "cluster.variants[0].failover_lag: must not be negative"},
		{"cluster: {variants: [{name: a, maxmemory: 1mb}]}\n", "cluster.variants[0].maxmemory: a variant changes the eviction fault, and there is none"},
		{"cluster: {placement: shared, variants: [{name: a, maxmemory: lots}]}\nfaults: [{eviction: {maxmemory: 1mb}}]\n", `cluster.variants[0].maxmemory: want a positive size such as 512kb, 64mb or 1048576, got "lots"`},
		{"cluster: {placement: shared, variants: [{name: a, eviction_policy: lifo}]}\nfaults: [{eviction: {maxmemory: 1mb}}]\n", `cluster.variants[0].eviction_policy: unknown policy "lifo"`},
		{"cluster: {placement: shared-racy}\nfaults: [{eviction: {maxmemory: 1mb}}]\n", "c.yaml:7:22: cluster.placement: the eviction fault needs a placement on the store's scripts"},
		{"cluster: {placement: shared, variants: [{name: a, placement: global-sync, sync_to: store}]}\nfaults: [{eviction: {maxmemory: 1mb}}]\n", "cluster.variants[0].placement: the eviction fault needs a placement on the store's scripts"},
		{"cluster: {placement: shared}\nfaults: [{eviction: {maxmemory: 0kb}}]\n", "faults[0].eviction.maxmemory: want a positive size"},
		{"cluster: {placement: shared}\nfaults: [{eviction: {maxmemory: 1mb, policy: random}}]\n", `faults[0].eviction.policy: unknown policy "random" (want one of allkeys-lru, volatile-ttl, noeviction)`},
		{"cluster: {placement: shared}\nfaults: [{eviction: {maxmemory: 1mb, outage_policy: pray}}]\n", `faults[0].eviction.outage_policy: unknown policy "pray"`},
		{"cluster: {placement: shared}\nfaults: [{eviction: {maxmemory: 1mb}}, {failover: {at: 1s}}]\n", "faults[0].eviction: a store under memory pressure cannot also fail over or move slots"},
		{"cluster: {placement: shared}\nfaults: [{failover: {lag: 1s}}]\n", "faults[0].failover.at: is required"},
		{"cluster: {placement: shared}\nfaults: [{failover: {at: 1s, lag: -1s}}]\n", "faults[0].failover.lag: must not be negative"},
		{"cluster: {placement: shared}\nfaults: [{reshard: {at: 1s, for: 0s, fraction: 0.5}}]\n", "faults[0].reshard.for: must be a positive duration"},
		{"cluster: {placement: shared}\nfaults: [{reshard: {at: 1s, for: 1s, fraction: 1.5}}]\n", "faults[0].reshard.fraction: must be in (0, 1], got 1.5"},
		{"cluster: {placement: shared}\nfaults: [{partition: {at: 1s, for: 1s}}]\n", "faults[0].partition.nodes: must be between 1 and 100000, got 0"},
		{"cluster: {placement: shared}\nfaults: [{partition: {at: 1s, for: 1s, nodes: 2, policy: wait}}]\n", `faults[0].partition.policy: unknown policy "wait"`},
		{"cluster: {placement: shared}\nfaults: [{outage: {at: 1s, for: 10s}}, {partition: {at: 5s, for: 1s, nodes: 1}}]\n", "faults[1].partition.at: partitions and outages must be in time order and not overlap"},
		{"cluster: {placement: shared}\nfaults: [{partition: {at: 1s, for: 1s, nodes: 1}, failover: {at: 2s}}]\n", "faults[0]: each fault entry holds exactly one fault"},
	}
	for _, tt := range tests {
		_, err := Parse("c.yaml", []byte(clusterHead+tt.tail))
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q:\n got %v\nwant one line containing %s", tt.tail, err, tt.want)
		}
	}
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"1048576": 1 << 20, "512kb": 512 << 10, "1MB": 1 << 20, "2gb": 2 << 30, "64k": 64000, "3m": 3e6, "100b": 100} {
		if got, err := ParseBytes(in); err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "0", "-1kb", "1.5mb", "lots", "9999999999gb"} {
		if _, err := ParseBytes(bad); err == nil {
			t.Errorf("ParseBytes(%q) took it", bad)
		}
	}
}

// The designs' settings and faults reach the fleets: the cluster section's, a variant's
// overrides, partitions among the outages in time order, and the defaults.
func TestDesignsReachTheFleets(t *testing.T) {
	sc, err := Parse("c.yaml", []byte(clusterHead+`cluster:
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
	vs := sc.fleetVariants(algorithms.Policy{Limit: 10, Window: time.Minute})
	plain, tuned := vs[0].cfg, vs[1].cfg
	if plain.Sync != cluster.DefaultSync || plain.SyncTo != "store" || plain.PeerLatency != 2*time.Millisecond || plain.Forward != "" {
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
		sc, err := Load(name)
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
