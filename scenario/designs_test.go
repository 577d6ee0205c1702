package scenario

import (
	"strings"
	"testing"
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
		{"cluster: {placement: shared}\nfaults: [{partition: {at: 1s, for: 1s, nodes: 2, cut: cables}}]\n", `c.yaml:8:55: faults[0].partition.cut: unknown cut "cables" (want one of both, store, peers)`},
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
