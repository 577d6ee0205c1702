package scenario

import (
	"strings"
	"testing"
)

const clusterHead = `name: c
duration: 1m
policy: {limit: 10, window: 1m}
traffic:
  - script:
      - {at: 1s, count: 5, key: u}
`

func TestBadClusterSectionsNamePositionAndField(t *testing.T) {
	tests := []struct{ tail, want string }{
		{"cluster: {nodes: 0}\n", "c.yaml:7:18: cluster.nodes: must be between 1 and 100000, got 0"},
		{"cluster: {balancer: sticky}\n", `c.yaml:7:21: cluster.balancer: unknown balancer "sticky"`},
		{"cluster: {placement: moon}\n", `c.yaml:7:22: cluster.placement: unknown placement "moon"`},
		{"cluster: {store: etcd}\n", `c.yaml:7:18: cluster.store: unknown store "etcd"`},
		{"cluster: {store: redis}\n", "c.yaml:7:10: cluster.redis_url: is required with store: redis"},
		{"cluster: {nodes: 2, colour: red}\n", "c.yaml:7:21: cluster.colour: unknown field"},
		{"cluster: {scale: [{at: 2s, nodes: 0}]}\n", "cluster.scale[0].nodes: must be between 1"},
		{"cluster: {scale: [{at: 2s, nodes: 2}, {at: 1s, nodes: 3}]}\n", "cluster.scale[1].at: scale steps must be in time order"},
		{"cluster: {variants: [{nodes: 2}]}\n", "cluster.variants[0].name: is required"},
		{"cluster: {variants: [{name: a}, {name: a}]}\n", `cluster.variants[1].name: variant "a" is named twice`},
		{"cluster: {variants: [{name: a, outage_policy: shrug}]}\n", `cluster.variants[0].outage_policy: unknown policy "shrug"`},
		{"cluster: {clock: wall}\n", `c.yaml:7:18: cluster.clock: unknown clock "wall" (want one of node, store)`},
		{"cluster: {variants: [{name: a, clock: sundial}]}\n", `c.yaml:7:39: cluster.variants[0].clock: unknown clock "sundial"`},
		{"cluster: {variants: [{name: a, skew: -2s}]}\n", `c.yaml:7:38: cluster.variants[0].skew: must not be negative`},
		{"cluster: {variants: [{name: a, skew: soon}]}\n", `cluster.variants[0].skew`},
		{"faults: [{latency: {round_trip: 1ms}}]\n", "c.yaml:7:9: faults: faults need a cluster section"},
		{"cluster: {}\nfaults: [{outage: {at: 1s, for: 0s}}]\n", "faults[0].outage.for: must be a positive duration"},
		{"cluster: {}\nfaults: [{outage: {at: 1s, for: 1s, policy: maybe}}]\n", `faults[0].outage.policy: unknown policy "maybe"`},
		{"cluster: {}\nfaults: [{outage: {at: 1s, for: 10s}}, {outage: {at: 5s, for: 1s}}]\n", "faults[1].outage.at: outages must be in time order and not overlap"},
		{"cluster: {}\nfaults: [{latency: {round_trip: 1ms}, skew: {max: 1s}}]\n", "faults[0]: each fault entry holds exactly one fault"},
		{"cluster: {}\nfaults: [{crash_between_incr_expire: {probability: 1.5}}]\n", "faults[0].crash_between_incr_expire.probability: must be between 0 and 1, got 1.5"},
		{"cluster: {}\nfaults: [{skew: {max: -1s}}]\n", "faults[0].skew.max: must not be negative"},
		{"cluster: {store_timeout: 0s}\n", "c.yaml:7:26: cluster.store_timeout: must be a positive duration"},
		{"cluster: {breaker: {failures: 0, open_for: 1s}}\n", "c.yaml:7:31: cluster.breaker.failures: must be at least 1, got 0"},
		{"cluster: {breaker: {failures: 2}}\n", "c.yaml:7:20: cluster.breaker.open_for: must be a positive duration"},
		{"cluster: {breaker: {failures: 2, open_for: 1s, colour: red}}\n", "cluster.breaker.colour: unknown field"},
		{"cluster: {variants: [{name: a, latency: -1ms}]}\n", "cluster.variants[0].latency: must not be negative"},
		{"cluster: {variants: [{name: a, store_timeout: 0s}]}\n", "cluster.variants[0].store_timeout: must be a positive duration"},
		{"cluster: {variants: [{name: a, breaker: {failures: 1, open_for: 0s}}]}\n", "cluster.variants[0].breaker.open_for: must be a positive duration"},
		{"cluster: {placement: shared-racy, variants: [{name: a, placement: racy}]}\n", `cluster.variants[0].placement: unknown placement "racy"`},
	}
	for _, tt := range tests {
		_, err := Parse("c.yaml", []byte(clusterHead+tt.tail))
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q:\n got %v\nwant one line containing %s", tt.tail, err, tt.want)
		}
	}
}
