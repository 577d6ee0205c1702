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
