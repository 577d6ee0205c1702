package scenario

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlsim/rlsim/cluster"
)

// toyBlip is a fault of this test's own: it registers, parses, validates with a position
// and applies without a line in any other file, as a new fault does.
type toyBlip struct {
	At    Offset   `yaml:"at"`
	Extra Duration `yaml:"extra"`
}

func init() {
	RegisterFault(FaultKind{Name: "toy_blip", Rank: 1000, New: func() Fault { return &toyBlip{} }})
}

func (b *toyBlip) Defaults() {
	if b.Extra == 0 {
		b.Extra = Duration(3 * time.Millisecond)
	}
}

func (b *toyBlip) Validate(c *Check) error {
	if !b.At.Set {
		return c.Fail("at", "is required")
	}
	if b.Extra < 0 {
		return c.Fail("extra", "must not be negative")
	}
	return nil
}

func (b *toyBlip) Apply(cfg *cluster.Config, _ time.Time) { cfg.Latency += time.Duration(b.Extra) }

func TestFaultRegistry(t *testing.T) {
	want := []string{"outage", "latency", "skew", "crash_between_incr_expire", "failover", "reshard", "eviction", "partition", "toy_blip"}
	if got := FaultNames(); !slices.Equal(got, want) {
		t.Fatalf("FaultNames() = %v, want %v", got, want)
	}
	for _, name := range FaultNames() {
		if f := faultKinds[name].New(); f == nil {
			t.Errorf("fault %s: New returns nil", name)
		}
	}
}

func TestANewFaultParsesValidatesAndApplies(t *testing.T) {
	sc, err := Parse("c.yaml", []byte(clusterHead+"cluster: {nodes: 2}\nfaults: [{latency: {round_trip: 2ms}}, {toy_blip: {at: 1s}}, {toy_blip: {at: 2s, extra: 5ms}}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg cluster.Config
	for _, f := range sc.Faults {
		f.Spec.Apply(&cfg, sc.EpochTime())
	}
	if cfg.Latency != 10*time.Millisecond {
		t.Errorf("latency %s, want 2ms + 3ms (the toy's default) + 5ms", cfg.Latency)
	}
	for _, c := range []struct{ tail, want string }{
		{"cluster: {}\nfaults: [{toy_blip: {extra: 1ms}}]\n", "c.yaml:8:21: faults[0].toy_blip.at: is required"},
		{"cluster: {}\nfaults: [{skew: {max: 1s}}, {toy_blip: {at: 1s, extra: -1ms}}]\n", "c.yaml:8:56: faults[1].toy_blip.extra: must not be negative"},
		{"cluster: {}\nfaults: [{toy_blip: {at: 1s}, skew: {max: 1s}}]\n", "faults[0]: each fault entry holds exactly one fault (outage, latency, skew, crash_between_incr_expire, failover, reshard, eviction, partition or toy_blip), found 2"},
		{"cluster: {}\nfaults: [{meteor: {at: 1s}}]\n", "faults[0].meteor: unknown field (known: outage, latency, skew, crash_between_incr_expire, failover, reshard, eviction, partition, toy_blip)"},
	} {
		_, err := Parse("c.yaml", []byte(clusterHead+c.tail))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.tail, err, c.want)
		}
	}
}

// The fleet's own checks (cluster.Config.Validate) are placed where the value came from:
// a variant's field, the cluster section's, or the fault an entry came from, in the
// order the file wrote the faults whatever order the fleet keeps them in.
func TestFleetErrorsArePlacedWhereTheValueCameFrom(t *testing.T) {
	for _, c := range []struct{ tail, want string }{
		{"cluster: {nodes: 2, variants: [{name: a}, {name: b, nodes: 0}]}\n", "c.yaml:7:60: cluster.variants[1].nodes: must be between 1 and 100000, got 0"},
		{"cluster: {nodes: 2, variants: [{name: a, breaker: {failures: 0, open_for: 1s}}]}\n", "cluster.variants[0].breaker.failures: must be at least 1, got 0"},
		{"cluster: {breaker: {failures: 2, open_for: 0s}}\n", "c.yaml:7:44: cluster.breaker.open_for: must be a positive duration"},
		{"cluster: {}\nfaults: [{failover: {at: 5s}}, {failover: {at: 2s}}]\n", "c.yaml:8:48: faults[1].failover.at: failovers must be in time order"},
		{"cluster: {}\nfaults: [{skew: {max: 1s}}, {reshard: {at: 1s, for: 1s, fraction: 2}}]\n", "c.yaml:8:67: faults[1].reshard.fraction: must be in (0, 1], got 2"},
		{"cluster: {}\nfaults: [{latency: {round_trip: -1ms}}]\n", "c.yaml:8:33: faults[0].latency.round_trip: must not be negative"},
		{"cluster: {}\nfaults: [{partition: {at: 1s, for: 1s, nodes: 1}}, {outage: {at: 5s, for: 1s, policy: hope}}]\n", `faults[1].outage.policy: unknown policy "hope"`},
		{"cluster: {placement: shared}\nfaults: [{eviction: {maxmemory: 1mb, policy: lfu}}]\n", `c.yaml:8:46: faults[0].eviction.policy: unknown policy "lfu"`},
		{"cluster: {variants: [{name: a, placement: owner, vnodes: 1}]}\n", "cluster.variants[0].vnodes: unknown field"},
		{"cluster: {nodes: 3, placement: owner, vnodes: 4096, scale: [{at: 1s, nodes: 5000}]}\n", "cluster.vnodes: 5000 nodes × 4096 points is more than the ring's"},
	} {
		_, err := Parse("c.yaml", []byte(clusterHead+c.tail))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.tail, err, c.want)
		}
	}
}
